// Checked accesses for memcheck (checked_access.h): finds `*p` / `*(T*)(e)` loads and stores
// whose meaning is plain and wraps them in the shim's macros.
#include "checked_access.h"

#include <algorithm>
#include <map>
#include <set>

#include "cpp_tokens.h"

namespace tmps {
namespace {
using sim_tokens::T;
using sim_tokens::Tok;

// Pointee types the macros move as one plain value: numbers and number vectors of 2 or 4
// (3-vectors load 4 elements' bytes; packed vectors have a smaller alignment; bool vectors
// are structs).
bool plain_type(const std::string& t) {
  static const std::set<std::string> numbers = {"float", "half", "bfloat", "int", "uint", "short", "ushort",
                                                "char",  "uchar", "long",  "ulong"};
  if (numbers.count(t) || t == "bool") return true;
  if (t.size() < 2 || (t.back() != '2' && t.back() != '4')) return false;
  return numbers.count(t.substr(0, t.size() - 1)) > 0;
}

bool qualifier(const std::string& w) {
  return w == "device" || w == "constant" || w == "threadgroup" || w == "thread" || w == "const" || w == "volatile";
}

// Identifiers that may precede a name without declaring it.
bool keyword_before_use(const std::string& w) {
  return w == "return" || w == "else" || w == "case" || w == "sizeof" || w == "do" || w == "__typeof__" || w == "typeof";
}

class Finder {
 public:
  explicit Finder(const std::vector<Tok>& t) : t_(t) {}

  bool is(size_t i, const char* s) const { return i < t_.size() && t_[i].kind == T::Punct && t_[i].text == s; }
  bool ident(size_t i) const { return i < t_.size() && t_[i].kind == T::Ident; }

  size_t match(size_t i) const { return sim_tokens::matching(t_, i); }  // npos if unbalanced

  // `[qualifiers] TYPE [qualifiers] *` ending at the '*' at k (not looking before lo): the
  // type word, or "" if the words before k hold more than one type word.
  std::string pointer_type_before(size_t k, size_t lo) const {
    std::string type;
    size_t q = k;
    while (q > lo && ident(q - 1)) {
      --q;
      if (qualifier(t_[q].text)) continue;
      if (!type.empty()) return "";
      type = t_[q].text;
    }
    return type;
  }

  // Declarations of [open_paren, body_close]: name -> plain pointer (false: array of pointers),
  // and the names declared any other way (never rewritten).
  void declarations(size_t lo, size_t hi) {
    for (size_t k = lo + 1; k + 1 < hi; ++k) {
      if (!ident(k)) continue;
      const std::string& n = t_[k].text;
      const Tok& p = t_[k - 1];
      if (is(k - 1, "*") && ident(k - 2) && !keyword_before_use(t_[k - 2].text)) {
        const bool ends = is(k + 1, "=") || is(k + 1, ";") || is(k + 1, ",") || is(k + 1, ")") || is(k + 1, "[");
        const std::string type = pointer_type_before(k - 1, lo);
        size_t start = k - 1;
        while (start > lo && ident(start - 1)) --start;
        const bool after = is(start - 1, ";") || is(start - 1, "{") || is(start - 1, "}") || is(start - 1, "(") ||
                           is(start - 1, ",") || (start > 0 && t_[start - 1].kind == T::Directive);
        if (ends && after && plain_type(type)) {
          const bool array = is(k + 1, "[") && !is(k + 2, "[");  // `p [[buffer(0)]]` is an attribute
          auto [it, fresh] = pointers_.emplace(n, !array);
          if (!fresh && it->second != !array) other_.insert(n);
        } else {
          other_.insert(n);
        }
        continue;
      }
      // `TYPE n`, `TYPE& n`, `vec<..> n`: declared as something else.
      if ((p.kind == T::Ident && !keyword_before_use(p.text)) ||
          (is(k - 1, "&") && ident(k - 2) && !keyword_before_use(t_[k - 2].text)) || is(k - 1, ">"))
        other_.insert(n);
    }
  }
  // 0: not a known plain pointer; 1: pointer; 2: array of pointers.
  int pointer(const std::string& n) const {
    if (other_.count(n)) return 0;
    auto it = pointers_.find(n);
    return it == pointers_.end() ? 0 : it->second ? 1 : 2;
  }

  // The operand of a '*' at k: past its last token, or 0 if not a form we rewrite.
  size_t operand_end(size_t k, size_t hi) const {
    size_t e = 0;
    if (ident(k + 1)) {
      const int kind = pointer(t_[k + 1].text);
      if (kind == 1) e = k + 2;
      if (kind == 2 && is(k + 2, "[")) {
        const size_t close = match(k + 2);
        if (close != std::string::npos) e = close + 1;
      }
    } else if (is(k + 1, "(")) {  // (T*)(e)
      const size_t cast_close = match(k + 1);
      if (cast_close == std::string::npos || !is(cast_close - 1, "*") || !is(cast_close + 1, "(")) return 0;
      const std::string type = pointer_type_before(cast_close - 1, k + 1);
      size_t first = cast_close - 1;
      while (first > k + 2 && ident(first - 1)) --first;
      if (first != k + 2 || !plain_type(type)) return 0;
      const size_t close = match(cast_close + 1);
      if (close != std::string::npos) e = close + 1;
    }
    if (!e || e >= hi) return 0;
    // A postfix operator would apply to the pointer, not to the loaded value.
    for (const char* p : {"[", "(", ".", "->", "++", "--"})
      if (is(e, p)) return 0;
    return e;
  }

  // `p[i]` at k (p a plain pointer): past its `]`, or 0 if a postfix operator follows.
  size_t index_end(size_t k, size_t hi) const {
    const size_t close = match(k + 1);
    if (close == std::string::npos || close + 1 >= hi) return 0;
    for (const char* p : {"[", "(", ".", "->", "++", "--"})
      if (is(close + 1, p)) return 0;
    return close + 1;
  }

  // The first token of the statement holding k (after `;`, `{`, `}` or a directive at depth 0).
  size_t statement_start(size_t k, size_t lo) const {
    int depth = 0;
    for (size_t q = k; q > lo; --q) {
      const Tok& x = t_[q - 1];
      if (x.kind == T::Directive) return q;
      if (x.kind != T::Punct) continue;
      if (x.text == ")" || x.text == "]") ++depth;
      else if (x.text == "(" || x.text == "[") {
        if (depth-- == 0) continue;  // an enclosing bracket: keep looking for the statement's start
      } else if (depth <= 0 && (x.text == ";" || x.text == "{" || x.text == "}")) {
        return q;
      }
    }
    return lo;
  }
  // The '(' enclosing k, or npos.
  size_t enclosing_paren(size_t k, size_t lo) const {
    int depth = 0;
    for (size_t q = k; q > lo; --q) {
      if (t_[q - 1].kind != T::Punct) continue;
      const std::string& x = t_[q - 1].text;
      if (x == ")" || x == "]") ++depth;
      else if (x == "[" && depth > 0) --depth;
      else if (x == "(" && depth-- == 0) return q - 1;
      else if (x == ";" || x == "{" || x == "}") return std::string::npos;
    }
    return std::string::npos;
  }

  // 0: leave alone; 1: load; 2: store. k at the access's first token ('*' or p of p[i]), e past it.
  int classify(size_t k, size_t e, size_t lo) const {
    const Tok& p = t_[k - 1];
    const bool p_stmt = p.kind == T::Directive || is(k - 1, ";") || is(k - 1, "{") || is(k - 1, "}") ||
                        is(k - 1, ")") || is(k - 1, ":") || (p.kind == T::Ident && p.text == "else");
    if (is(e, "=")) return p_stmt ? 2 : 0;
    static const std::set<std::string> prev = {"=",  "?",  ":",  "(",  ",",  "[",  "+",  "-",  "/",  "%",  "|",  "^",
                                               "!",  "~",  "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=",
                                               "%=", "&=", "|=", "^=", "<<=", ">>="};
    static const std::set<std::string> next = {";", ")", ",", "]", "?", ":", "}", "+", "-", "*", "/", "%", "|",
                                               "^", "&", "&&", "||", "==", "!=", "<", ">", "<=", ">=", "<<", ">>"};
    const bool p_ok = (p.kind == T::Punct && prev.count(p.text)) || (p.kind == T::Ident && p.text == "return");
    if (!p_ok || t_[e].kind != T::Punct || !next.count(t_[e].text)) return 0;
    // Closing parentheses pass the value outwards: `(*p).x = 1` or `(*p) = 1` need the lvalue.
    size_t after = e;
    while (is(after, ")")) ++after;
    if (after != e && after < t_.size() && !(t_[after].kind == T::Punct && next.count(t_[after].text))) return 0;
    // A reference declared in the statement might bind to the value: `T& r = *p;`.
    for (size_t q = statement_start(k, lo); q < k; ++q)
      if (is(q, "&") && q > 0 && (ident(q - 1) || is(q - 1, ">")) && ident(q + 1)) return 0;
    // A whole argument of a call might bind to a reference parameter; constructors of number
    // types and grouping parentheses take values.
    if ((is(k - 1, "(") || is(k - 1, ",")) && (is(e, ")") || is(e, ","))) {
      const size_t open = enclosing_paren(k, lo);
      if (open != std::string::npos && open > 0) {
        const Tok& callee = t_[open - 1];
        const bool control = callee.kind == T::Ident &&
                             (callee.text == "if" || callee.text == "while" || callee.text == "for" ||
                              callee.text == "switch" || callee.text == "return");
        if (callee.kind == T::Ident && !control && !plain_type(callee.text)) return 0;
        if (is(open - 1, ">") || is(open - 1, ")") || is(open - 1, "]")) return 0;
      }
    }
    return 1;
  }

  std::map<std::string, bool> pointers_;
  std::set<std::string> other_;

 private:
  const std::vector<Tok>& t_;
};

struct Insert {
  size_t at;
  size_t remove;  // bytes replaced at `at`
  std::string text;
  size_t order;   // stable among inserts at one offset
};

}  // namespace

std::string check_accesses(const std::string& text, const std::vector<std::string>& functions, size_t* sites) {
  const std::vector<Tok> t = sim_tokens::tokenize(text);
  std::vector<Insert> edits;
  for (const std::string& name : functions) {
    Finder f(t);
    size_t open = std::string::npos, count = 0;
    for (size_t i = 1; i + 1 < t.size(); ++i)
      if (f.ident(i) && t[i].text == name && f.is(i + 1, "(") && f.ident(i - 1) && t[i - 1].text == "void") {
        const size_t close = f.match(i + 1);
        if (close != std::string::npos && f.is(close + 1, "{")) {
          open = i + 1;
          ++count;
        }
      }
    if (count != 1) continue;
    const size_t body = f.match(open) + 1, end = f.match(body);
    if (end == std::string::npos) continue;
    f.declarations(open, end);
    for (size_t k = body + 1; k < end; ++k) {
      size_t e = 0;
      bool indexed = false;
      if (f.is(k, "*")) {
        e = f.operand_end(k, end);
      } else if (f.ident(k) && f.is(k + 1, "[") && f.pointer(t[k].text) == 1 &&
                 !(f.is(k - 1, ".") || f.is(k - 1, "->") || f.is(k - 1, "::") || f.is(k - 1, "&"))) {
        e = f.index_end(k, end);  // p[i]: the access at &p[i]
        indexed = true;
      }
      if (!e) continue;
      const int kind = f.classify(k, e, body);
      if (!kind) continue;
      const Tok& last = t[e - 1];
      const std::string open = std::string(kind == 2 ? "TMPS_MC_STORE(" : "TMPS_MC_LOAD(") + (indexed ? "&" : "");
      edits.push_back({t[k].at, indexed ? 0u : 1u, open, edits.size()});
      edits.push_back({last.at + last.text.size(), 0, ")", edits.size()});
    }
  }
  if (sites) *sites = edits.size() / 2;
  std::sort(edits.begin(), edits.end(),
            [](const Insert& a, const Insert& b) { return a.at != b.at ? a.at < b.at : a.order > b.order; });
  std::string out;
  out.reserve(text.size() + edits.size() * 8);
  size_t at = 0;
  for (const Insert& x : edits) {
    out.append(text, at, x.at - at);
    out += x.text;
    at = x.at + x.remove;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace tmps
