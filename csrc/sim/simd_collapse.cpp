// SIMD-group collapse (simd_collapse.h): tokens -> statement tree -> uniformity -> regions.
#include "simd_collapse.h"

#include "cpp_tokens.h"

#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <sstream>

namespace tmps {
namespace {
using sim_tokens::T;
using sim_tokens::Tok;
using sim_tokens::tokenize;

// An assignment operator (=, +=, <<=, ...), not a comparison.
bool is_assign(const Tok& t) {
  const std::string& p = t.text;
  return t.kind == T::Punct && !p.empty() && p.back() == '=' && p != "==" && p != "!=" && p != "<=" && p != ">=";
}

// ---- statements --------------------------------------------------------------------------------

struct Stmt {
  enum Kind { Simple, Block, If, For, While, Do, Opaque, Return, Jump } kind = Simple;
  size_t b = 0, e = 0;          // tokens [b, e) (a Simple's e is past its ';')
  size_t hb = 0, he = 0;        // header: the condition (If/While) or the for(...) inside
  std::vector<std::unique_ptr<Stmt>> kids;  // Block: statements; If: then [, else]; loops: body
  bool sync = false;
  // Simple declarations
  bool is_decl = false;
  size_t name = 0;              // token of the declared name
  size_t init = 0;              // first token after '=' (0: no initialiser)
};

struct Refusal {
  std::string why;
};
[[noreturn]] void refuse(const std::string& why) { throw Refusal{why}; }

class Collapser {
 public:
  Collapser(const std::vector<Tok>& t, std::string file) : t_(t), file_(std::move(file)) {}

  const std::vector<Tok>& t_;
  std::string file_;

  bool is(size_t i, const char* s) const { return i < t_.size() && t_[i].kind != T::Literal && t_[i].text == s; }
  bool ident(size_t i) const { return i < t_.size() && t_[i].kind == T::Ident; }

  size_t match(size_t i) const {  // i at ( [ {: the index of its partner
    const size_t k = sim_tokens::matching(t_, i);
    if (k == std::string::npos) refuse("unbalanced brackets");
    return k;
  }

  // Unary * or & at k (not multiplication / bitwise and), in a range starting at b: the token
  // before is an operator.
  bool unary_at(size_t k, size_t b) const {
    if (k == b) return true;
    const Tok& p = t_[k - 1];
    if (p.kind == T::Ident) return p.text == "return";
    if (p.kind == T::Number || p.kind == T::Literal) return false;
    return !(p.text == ")" || p.text == "]");
  }

  // A call or use of a synchronising name: barriers, SIMD-/quad-group functions, simdgroup_matrix
  // multiplies. (simdgroup_matrix types, loads and stores are per-lane: matrix_word.)
  bool sync_at(size_t i) const {
    if (!ident(i)) return false;
    const std::string& w = t_[i].text;
    if (w == "simdgroup_multiply_accumulate" || w == "simdgroup_multiply") return is(i + 1, "(");
    if (w.rfind("simdgroup_", 0) == 0 && w != "simdgroup_barrier" && !matrix_word(w))
      refuse("simdgroup_matrix (" + w + ")");
    if (w == "thread_elements" && i > 0 && (is(i - 1, ".") || is(i - 1, "->"))) refuse("simdgroup_matrix thread_elements()");
    if (w == "threadgroup_barrier" || w == "simdgroup_barrier") return true;
    return (w.rfind("simd_", 0) == 0 || w.rfind("quad_", 0) == 0) && is(i + 1, "(");
  }

  // simdgroup_matrix names a collapsed kernel renames to the shim's whole-matrix forms
  // (tmps_metal_matrix.h, sg_matrix): the types, make_filled_simdgroup_matrix, loads and stores.
  static bool matrix_word(const std::string& w) { return matrix_names().count(w) != 0; }
  static const std::map<std::string, std::string>& matrix_names() {
    static const std::map<std::string, std::string> m = {
        {"simdgroup_matrix", "::tmps_sim::sg_matrix_rc"},
        {"simdgroup_float8x8", "::tmps_sim::sg_matrix<float>"},
        {"simdgroup_half8x8", "::tmps_sim::sg_matrix<half>"},
        {"simdgroup_bfloat8x8", "::tmps_sim::sg_matrix<bfloat>"},
        {"make_filled_simdgroup_matrix", "::tmps_sim::sg_filled"},
        {"simdgroup_load", "::tmps_sim::sg_load"},
        {"simdgroup_store", "::tmps_sim::sg_store"},
        {"simdgroup_multiply_accumulate", "::tmps_sim::sg_mma"},
        {"simdgroup_multiply", "::tmps_sim::sg_mul"}};
    return m;
  }
  static bool matrix_type(const std::string& w) {
    return w == "simdgroup_matrix" || w == "simdgroup_float8x8" || w == "simdgroup_half8x8" || w == "simdgroup_bfloat8x8";
  }

  std::unique_ptr<Stmt> parse(size_t& i, size_t end) {
    auto s = std::make_unique<Stmt>();
    s->b = i;
    if (i >= end) refuse("statement runs past the body");
    if (t_[i].kind == T::Directive) refuse("preprocessor line in the kernel body");
    const std::string w = t_[i].text;
    if (is(i, "{")) {
      s->kind = Stmt::Block;
      size_t close = match(i);
      ++i;
      while (i < close) s->kids.push_back(parse(i, close));
      i = close + 1;
    } else if (w == "if" || w == "while" || w == "for" || w == "switch") {
      if (!is(i + 1, "(")) refuse("malformed " + w);
      size_t close = match(i + 1);
      s->hb = i + 2;
      s->he = close;
      s->kind = w == "if" ? Stmt::If : w == "while" ? Stmt::While : w == "for" ? Stmt::For : Stmt::Opaque;
      i = close + 1;
      s->kids.push_back(parse(i, end));
      if (w == "if" && is(i, "else")) {
        ++i;
        s->kids.push_back(parse(i, end));
      }
    } else if (w == "do") {
      s->kind = Stmt::Do;
      ++i;
      s->kids.push_back(parse(i, end));
      if (!is(i, "while") || !is(i + 1, "(")) refuse("malformed do loop");
      s->hb = i + 2;
      s->he = match(i + 1);
      i = s->he + 1;
      if (!is(i, ";")) refuse("malformed do loop");
      ++i;
    } else {
      if (w == "goto" || w == "case" || w == "default" || (ident(i) && is(i + 1, ":"))) refuse("labels or goto");
      s->kind = w == "return" ? Stmt::Return : (w == "break" || w == "continue") ? Stmt::Jump : Stmt::Simple;
      int depth = 0;
      while (i < end && !(depth == 0 && is(i, ";"))) {
        if (t_[i].kind == T::Punct) {
          const std::string& p = t_[i].text;
          if (p == "(" || p == "[" || p == "{") ++depth;
          if (p == ")" || p == "]" || p == "}") --depth;
        }
        ++i;
      }
      if (i >= end) refuse("statement without ';'");
      ++i;
      s->e = i;
      if (s->kind == Stmt::Simple) parse_decl(*s);
    }
    s->e = i;
    for (size_t k = s->b; k < s->e; ++k) s->sync = s->sync || sync_at(k);
    return s;
  }

  static bool type_word(const std::string& w) {
    static const std::set<std::string> not_types = {"return", "delete", "throw", "else", "sizeof", "new", "co_return"};
    return !not_types.count(w);
  }

  void parse_decl(Stmt& s) {
    const size_t last = s.e - 1;  // the ';'
    size_t stop = last;
    int depth = 0;
    for (size_t k = s.b; k < last; ++k) {
      const std::string& p = t_[k].text;
      if (t_[k].kind == T::Punct && (p == "(" || p == "[" || p == "{")) ++depth;
      if (t_[k].kind == T::Punct && (p == ")" || p == "]" || p == "}")) --depth;
      if (depth == 0 && t_[k].kind == T::Punct && p == "=") { stop = k; break; }
      if (depth == 0 && t_[k].kind == T::Punct && (p == "(" || p == "{") && k > s.b && ident(k - 1) && k - 1 > s.b &&
          (ident(k - 2) || is(k - 2, "*") || is(k - 2, "&") || is(k - 2, ">")) && ident(s.b) && type_word(t_[s.b].text) &&
          !is(k - 2, "return")) {
        bool all_type = true;
        for (size_t q = s.b; q < k - 1; ++q)
          all_type = all_type && (ident(q) || is(q, "*") || is(q, "&") || is(q, "::") || is(q, "<") || is(q, ">"));
        if (all_type) refuse("a declaration with constructor syntax (T x(...) or T x{...})");
      }
    }
    size_t n = stop;
    if (n == s.b) return;
    --n;
    while (n > s.b && is(n, "]")) {
      int d = 0;
      while (n > s.b) {
        if (is(n, "]")) ++d;
        if (is(n, "[") && --d == 0) break;
        --n;
      }
      if (n == s.b) return;
      --n;
    }
    if (!ident(n) || n == s.b) return;
    int angle = 0;
    for (size_t q = s.b; q < n; ++q) {
      if (is(q, "<")) ++angle;
      else if (is(q, ">")) --angle;
      else if (!(ident(q) || is(q, "*") || is(q, "&") || is(q, "::") || (angle > 0 && (is(q, ",") || t_[q].kind == T::Number))))
        return;
    }
    if (!ident(s.b) && !is(s.b, "::")) return;
    if (ident(s.b) && !type_word(t_[s.b].text)) return;
    s.is_decl = true;
    s.name = n;
    s.init = stop < last ? stop + 1 : 0;
    depth = 0;
    int tmpl = 0;  // template argument lists (`f<float, 8, 8>(...)`); a misread is caught by the compile
    for (size_t k = s.init ? s.init : last; k < last; ++k) {
      const std::string& p = t_[k].text;
      if (t_[k].kind == T::Punct && (p == "(" || p == "[" || p == "{")) ++depth;
      if (t_[k].kind == T::Punct && (p == ")" || p == "]" || p == "}")) --depth;
      if (is(k, "<") && k > 0 && ident(k - 1)) ++tmpl;
      if (is(k, ">") && tmpl > 0) --tmpl;
      if (depth == 0 && tmpl == 0 && is(k, ",")) refuse("several names in one declaration");
    }
  }
};

// ---- uniformity and the rewrite ----------------------------------------------------------------

// Functions without side effects or memory reads: a uniform statement may call them.
const std::set<std::string>& pure_functions() {
  static const std::set<std::string> s = [] {
    std::set<std::string> s = {
      "as_type", "static_cast", "reinterpret_cast", "fmax", "fmin", "max", "min", "abs", "fabs", "select", "clamp",
      "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "floor", "ceil", "trunc", "round", "rint", "fma", "popcount",
      "clz", "ctz", "mulhi", "mix", "sign", "copysign", "isnan", "isinf", "isfinite", "signbit", "threadgroup_static",
      "fmod", "pow", "sin", "cos", "tan", "tanh", "erf", "float", "int", "uint", "half", "bfloat", "bool", "short",
      "ushort", "char", "uchar", "long", "ulong", "extract_bits", "insert_bits", "reverse_bits", "rotate", "absdiff", "addsat", "subsat", "hadd", "rhadd", "madhi", "madsat", "mulsat",
      "to_bfloat"};
    // the vector constructors: float2 ... ulong4
    for (const char* base : {"float", "half", "bfloat", "int", "uint", "short", "ushort", "char", "uchar", "long", "ulong", "bool"})
      for (const char* n : {"2", "3", "4"}) s.insert(std::string(base) + n);
    return s;
  }();
  return s;
}

struct Local {
  const Stmt* decl = nullptr;
  bool uniform = true;
  bool lane_local = false;  // declared inside a lane-divergent statement: a plain per-lane local
};

class Rewriter {
 public:
  Rewriter(const Collapser& c, std::set<std::string> varying_params, std::set<std::string> params,
           std::set<std::string> linear_tids)
      : c_(c), t_(c.t_), vparams_(std::move(varying_params)), params_(std::move(params)),
        linear_tids_(std::move(linear_tids)) {}

  void collect(const Stmt& s) {
    if (s.kind == Stmt::Simple && !s.is_decl)
      for (size_t k = s.b; k < s.e; ++k)
        if (c_.ident(k) && Collapser::matrix_type(t_[k].text))
          refuse("a simdgroup_matrix declaration the rewrite does not read (line " + std::to_string(t_[s.b].line) + ")");
    if (s.kind == Stmt::Simple && s.is_decl) {
      const std::string& n = t_[s.name].text;
      if (locals_.count(n) || params_.count(n)) refuse("the name '" + n + "' is declared twice");
      locals_[n].decl = &s;
      for (size_t k = s.b; k < s.name; ++k)
        if (c_.ident(k) && Collapser::matrix_type(t_[k].text)) matrices_.insert(n);
    }
    for (const auto& k : s.kids) collect(*k);  // for-header declarations: collect_for
  }

  bool is_local(const std::string& n) const { return locals_.count(n) != 0; }
  bool pure(const std::string& f) const { return pure_functions().count(f) || pure_helpers_.count(f); }
  bool is_matrix(size_t k) const {
    return c_.ident(k) && matrices_.count(t_[k].text) && !(k > 0 && (c_.is(k - 1, ".") || c_.is(k - 1, "->") || c_.is(k - 1, "::")));
  }

  // `tid >> 5u` or `tid / 32u`, tid the threadgroup's linear thread index, alone between
  // operators that bind less: the SIMD-group's index in the threadgroup (SIMD-groups are runs of
  // 32 consecutive indices, and only full ones collapse), the same in every lane.
  bool simdgroup_index_at(size_t k) const {
    if (!c_.ident(k) || !linear_tids_.count(t_[k].text) || k == 0 || k + 3 >= t_.size()) return false;
    auto number = [&](size_t q, const char* v) {
      if (t_[q].kind != T::Number) return false;
      std::string n = t_[q].text;
      while (!n.empty() && (n.back() == 'u' || n.back() == 'U')) n.pop_back();
      return n == v;
    };
    if (!((c_.is(k + 1, ">>") && number(k + 2, "5")) || (c_.is(k + 1, "/") && number(k + 2, "32")))) return false;
    static const std::set<std::string> before = {"=", "(", ",", "?", ":", "&&", "||", "<", ">", "<=", ">=", "==", "!=", "|", "^"};
    static const std::set<std::string> after = {";", ")", ",", "]", "?", ":", "&&", "||", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^"};
    const Tok& p = t_[k - 1];
    const Tok& n = t_[k + 3];
    return p.kind == T::Punct && before.count(p.text) && n.kind == T::Punct && after.count(n.text);
  }

  bool unary_at(size_t k, size_t b) const { return c_.unary_at(k, b); }

  // May tokens [b, e) run once for the SIMD-group? (No lane-varying name, no memory read, no
  // call but the pure ones.) `allow_assign`: assignments to uniform locals allowed.
  bool uniform_range(size_t b, size_t e, bool allow_assign) const {
    for (size_t k = b; k < e; ++k) {
      const Tok& x = t_[k];
      if (x.kind == T::Ident) {
        if (x.text == "threadgroup_static") {  // the frontend's shared storage: the same for every lane
          while (k < e && !c_.is(k, "(")) ++k;
          if (k < e) k = c_.match(k);
          continue;
        }
        if (k > b && (c_.is(k - 1, ".") || c_.is(k - 1, "->"))) continue;
        if (k > b && c_.is(k - 1, "::")) {
          if (c_.is(k + 1, "(") && !pure(x.text)) return false;
          continue;
        }
        if (simdgroup_index_at(k)) {
          k += 2;
          continue;
        }
        if (vparams_.count(x.text)) return false;
        auto it = locals_.find(x.text);
        if (it != locals_.end()) {
          if (!it->second.uniform) return false;
          continue;
        }
        if (params_.count(x.text)) continue;
        if ((c_.is(k + 1, "(") || c_.is(k + 1, "<")) && !pure(x.text)) {
          if (c_.is(k + 1, "<")) continue;  // a comparison with a uniform name, or a template: decided below
          return false;
        }
      } else if (x.kind == T::Punct) {
        const std::string& p = x.text;
        if (p == "[" || p == "->") return false;
        if ((p == "*" || p == "&") && unary_at(k, b)) return false;
        if (!allow_assign && (p == "++" || p == "--" || is_assign(x))) return false;
      }
    }
    return true;
  }

  // Locals a statement may write: before an assignment operator (through .member and [i]
  // chains), beside ++/--, behind unary &, or passed to a call that is not pure.
  std::set<std::string> writes(size_t b, size_t e) const {
    std::set<std::string> out;
    for (size_t k = b; k < e; ++k) {
      if (t_[k].kind != T::Ident || !is_local(t_[k].text) || is_matrix(k)) continue;
      if (k > b && (c_.is(k - 1, ".") || c_.is(k - 1, "->") || c_.is(k - 1, "::"))) continue;
      size_t j = k + 1;
      bool indexed = false;
      for (;;) {
        if (c_.is(j, ".") && c_.ident(j + 1)) { j += 2; continue; }
        if (c_.is(j, "[")) { j = c_.match(j) + 1; indexed = true; continue; }
        break;
      }
      // x[i] = ... writes the variable only if x is a private array (not a pointer, nor a
      // reference to threadgroup storage): then the elements are the variable's own.
      const Stmt* d = locals_.at(t_[k].text).decl;
      if (indexed && !(d && d->kind == Stmt::Simple && c_.is(d->name + 1, "["))) continue;
      const bool assign = j < e && is_assign(t_[j]);
      const bool incdec = c_.is(j, "++") || c_.is(j, "--") || (k > b && (c_.is(k - 1, "++") || c_.is(k - 1, "--")));
      const bool addr = k > b && c_.is(k - 1, "&") && unary_at(k - 1, b);
      if (assign || incdec || addr) out.insert(t_[k].text);
    }
    // Arguments of calls that are not pure: conservatively written (thread T& parameters).
    for (size_t k = b; k < e; ++k) {
      if (!c_.ident(k) || !c_.is(k + 1, "(") || pure(t_[k].text) || c_.sync_at(k)) continue;
      if (Collapser::matrix_word(t_[k].text)) continue;  // writes only its matrix (is_matrix), by value otherwise
      const size_t close = c_.match(k + 1);
      for (size_t q = k + 2; q < close; ++q)
        if (c_.ident(q) && is_local(t_[q].text) && !is_matrix(q) && !(q > k + 2 && (c_.is(q - 1, ".") || c_.is(q - 1, "->"))))
          out.insert(t_[q].text);
    }
    return out;
  }

  // Is statement s (in a uniform context) uniform as a whole?
  bool stmt_uniform(const Stmt& s) const {
    switch (s.kind) {
      case Stmt::Simple:
        if (s.sync) return false;
        if (s.is_decl && !locals_.at(t_[s.name].text).uniform) return false;
        return uniform_range(s.is_decl ? (s.init ? s.init : s.e) : s.b, s.e - 1, !s.is_decl);
      case Stmt::Block:
        for (const auto& k : s.kids)
          if (!stmt_uniform(*k)) return false;
        return true;
      case Stmt::If:
      case Stmt::While:
      case Stmt::Do:
      case Stmt::For:
        if (s.sync) return false;
        if (!uniform_range(s.hb, s.he, true)) return false;
        for (const auto& k : s.kids)
          if (!stmt_uniform(*k)) return false;
        return for_decl_uniform(s);
      case Stmt::Jump:
        return true;
      default:
        return false;
    }
  }
  bool for_decl_uniform(const Stmt& s) const {
    if (s.kind != Stmt::For) return true;
    for (size_t k = s.hb; k < s.he; ++k)
      if (c_.ident(k) && is_local(t_[k].text) && !locals_.at(t_[k].text).uniform) return false;
    return true;
  }

  void mark_varying(const std::string& n) {
    if (matrices_.count(n)) refuse("a simdgroup_matrix declared where the lanes differ ('" + n + "')");
    auto it = locals_.find(n);
    if (it != locals_.end() && it->second.uniform) {
      it->second.uniform = false;
      changed_ = true;
    }
  }

  // One pass of the fixpoint: `lane`: inside a statement that runs per lane.
  void walk(const Stmt& s, bool lane) {
    if (lane) {
      if (s.kind == Stmt::Simple && s.is_decl) {
        locals_[t_[s.name].text].lane_local = true;
        mark_varying(t_[s.name].text);
      }
      if (s.kind == Stmt::For) {
        auto it = for_decls_.find(&s);
        if (it != for_decls_.end()) {
          locals_[it->second].lane_local = true;
          mark_varying(it->second);
        }
      }
      for (const auto& n : writes(s.b, s.e)) mark_varying(n);
      for (const auto& k : s.kids) walk(*k, true);
      return;
    }
    switch (s.kind) {
      case Stmt::Simple:
        if (s.sync) {
          if (s.is_decl) mark_varying(t_[s.name].text);
          for (const auto& n : writes(s.b, s.e)) mark_varying(n);
        } else if (!stmt_uniform(s)) {
          if (s.is_decl) mark_varying(t_[s.name].text);
          for (const auto& n : writes(s.b, s.e)) mark_varying(n);
        }
        return;
      case Stmt::Block:
        for (const auto& k : s.kids) walk(*k, false);
        return;
      case Stmt::If:
      case Stmt::While:
      case Stmt::For:
      case Stmt::Do:
        if (s.sync) {  // stays structured: its own statements are walked in uniform context
          if (s.kind == Stmt::For) walk_for_header(s);
          for (const auto& k : s.kids) walk(*k, false);
        } else if (!stmt_uniform(s)) {
          for (const auto& n : writes(s.hb, s.he)) mark_varying(n);
          for (size_t k = s.hb; k < s.he; ++k)  // a for's own declaration: per lane
            if (c_.ident(k) && is_local(t_[k].text) && for_declares(s, t_[k].text)) {
              locals_[t_[k].text].lane_local = true;
              mark_varying(t_[k].text);
            }
          for (const auto& k : s.kids) walk(*k, true);
        }
        return;
      default:
        return;
    }
  }
  // for (T i = a; ...): declarations in a for header are collected from its header below.
  bool for_declares(const Stmt& s, const std::string& n) const {
    auto it = for_decls_.find(&s);
    return it != for_decls_.end() && it->second == n;
  }
  void walk_for_header(const Stmt& s) {
    for (const auto& n : writes(s.hb, s.he))
      if (!uniform_range(s.hb, s.he, true)) mark_varying(n);
  }

  // The declarations in for headers: `for (int i = 0; ...)` declares i.
  void collect_for(const Stmt& s) {
    if (s.kind == Stmt::For) {
      size_t semi = s.hb;
      while (semi < s.he && !c_.is(semi, ";")) ++semi;
      size_t eq = s.hb;
      while (eq < semi && !c_.is(eq, "=")) ++eq;
      if (eq < semi && eq > s.hb + 1 && c_.ident(eq - 1) && c_.ident(eq - 2)) {
        const std::string& n = t_[eq - 1].text;
        if (locals_.count(n) || params_.count(n)) refuse("the name '" + n + "' is declared twice");
        locals_[n].decl = &s;
        for_decls_[&s] = n;
        // its initial value decides too
        init_ranges_.push_back({n, {eq + 1, semi}});
      }
    }
    for (const auto& k : s.kids) collect_for(*k);
  }

  void analyse(const Stmt& body) {
    collect(body);
    collect_for(body);
    for (size_t k = body.b; k < body.e; ++k)
      if (c_.ident(k) && is_local(t_[k].text) && !(k > 0 && (c_.is(k - 1, ".") || c_.is(k - 1, "->") || c_.is(k - 1, "::"))))
        uses_[t_[k].text].push_back(k);
    do {
      changed_ = false;
      for (const auto& r : init_ranges_)
        if (!uniform_range(r.second.first, r.second.second, false)) mark_varying(r.first);
      walk(body, false);
    } while (changed_);
  }

  // ---- emission --------------------------------------------------------------------------------

  bool arrayed(const std::string& n) const {
    auto it = locals_.find(n);
    return it != locals_.end() && !it->second.uniform && !it->second.lane_local && !scalars_.count(n);
  }

  // A lane array of a number vector (uint4, float2, ...) is kept as one array per component
  // (tmps_metal_simd.h, soa): a lane loop then moves scalars, which the C++ compiler vectorizes
  // across lanes; clang's loop vectorizer gives up on any loop that loads or stores a whole
  // vector per lane. Only when every use is a single component (`v.x`, read or written), a whole
  // assignment starting a statement (`v = e;`, the declaration's value) or the shuffle's own
  // array (fast_shuffle); anything else (`v * 2`, `v.xy`, `&v`) keeps the array of vectors.
  // Returns the component type and count, or {"", 0}.
  static std::pair<std::string, int> number_vector(const std::string& type) {
    static const char* const bases[] = {"float", "half", "bfloat", "int", "uint", "short", "ushort", "char", "uchar", "long", "ulong"};
    if (type.size() < 2) return {"", 0};
    const char n = type.back();
    if (n < '2' || n > '4') return {"", 0};
    const std::string base = type.substr(0, type.size() - 1);
    for (const char* b : bases)
      if (base == b) return {base, n - '0'};
    return {"", 0};
  }
  static int component_index(const std::string& c) {
    static const std::string xyzw = "xyzw", rgba = "rgba";
    if (c.size() != 1) return -1;
    size_t i = xyzw.find(c[0]);
    if (i == std::string::npos) i = rgba.find(c[0]);
    return i == std::string::npos ? -1 : int(i);
  }
  std::pair<std::string, int> soa_type(const std::string& n) const {
    auto memo = soa_.find(n);
    if (memo != soa_.end()) return memo->second;
    auto& out = soa_[n];
    const Stmt* d = locals_.at(n).decl;
    if (!d || d->kind != Stmt::Simple || !d->is_decl) return out;
    size_t type_at = d->b;
    while (type_at < d->name && c_.is(type_at, "const")) ++type_at;
    if (type_at + 1 != d->name || c_.is(d->name + 1, "[")) return out;  // one type word, not an array
    const auto vec = number_vector(t_[type_at].text);
    if (!vec.second) return out;
    for (size_t k : uses_.at(n)) {
      if (k == d->name) continue;
      if (c_.is(k + 1, ".") && k + 2 < t_.size() && component_index(t_[k + 2].text) >= 0 && !c_.is(k + 3, "(") &&
          !c_.is(k + 3, "."))
        continue;
      const bool starts = k > 0 && (c_.is(k - 1, ";") || c_.is(k - 1, "{") || c_.is(k - 1, "}") || c_.is(k - 1, ")") ||
                                    c_.is(k - 1, "else") || c_.is(k - 1, "do"));
      if (starts && c_.is(k + 1, "=")) continue;  // `v = e;` (lane_stmt, render)
      return out;
    }
    out = {vec.first, vec.second};
    return out;
  }
  bool soa(const std::string& n) const { return arrayed(n) && soa_type(n).second > 0; }
  // `v[tmps_l] = value;` for lane array v.
  std::string set_lane(const std::string& n, const std::string& value) const {
    if (soa(n)) return "::tmps_sim::soa_set(" + n + ", tmps_l, " + value + ");\n";
    return n + "[tmps_l] = " + value + ";\n";
  }

  std::string render(size_t b, size_t e, bool lane) const {
    std::string out;
    for (size_t k = b; k < e; ++k) {
      const Tok& x = t_[k];
      if (!out.empty()) out += ' ';
      if (lane && x.kind == T::Ident && !(k > b && (c_.is(k - 1, ".") || c_.is(k - 1, "->") || c_.is(k - 1, "::"))) &&
          soa(x.text)) {
        if (c_.is(k + 1, "=")) {  // `v = e` inside a statement rendered whole: up to `,` `;` `)` outside brackets
          size_t end = k + 2;
          for (int depth = 0; end < e; ++end) {
            if (c_.is(end, "(") || c_.is(end, "[") || c_.is(end, "{")) ++depth;
            else if (c_.is(end, ")") || c_.is(end, "]") || c_.is(end, "}")) { if (depth-- == 0) break; }
            else if (depth == 0 && (c_.is(end, ",") || c_.is(end, ";"))) break;
          }
          out += "::tmps_sim::soa_set(" + x.text + ", tmps_l, " + render(k + 2, end, true) + ")";
          k = end - 1;
          continue;
        }
        const int c = k + 2 < e && c_.is(k + 1, ".") ? component_index(t_[k + 2].text) : -1;
        if (c < 0) refuse("a lane vector kept per component used whole (line " + std::to_string(x.line) + ")");
        out += x.text + ".c[" + std::to_string(c) + "][tmps_l]";
        k += 2;
        continue;
      }
      if (x.kind == T::Ident && Collapser::matrix_word(x.text)) {
        if (k > 0 && (c_.is(k - 1, "::") || c_.is(k - 1, ".") || c_.is(k - 1, "->")))
          refuse("a qualified simdgroup_matrix name (" + x.text + ")");
        out += Collapser::matrix_names().at(x.text);
        if (x.text == "simdgroup_load" || x.text == "simdgroup_store") {
          // the lane's part: its index is the first argument
          if (!lane || !c_.is(k + 1, "(")) refuse(x.text + " outside a loop over the lanes");
          out += " ( tmps_l ,";
          ++k;
        }
        continue;
      }
      if (!lane && simdgroup_index_at(k)) {
        out += x.text + "[0]";
        continue;
      }
      out += x.text;
      if (lane && x.kind == T::Ident && !(k > b && (c_.is(k - 1, ".") || c_.is(k - 1, "->") || c_.is(k - 1, "::"))) &&
          (arrayed(x.text) || vparams_.count(x.text)))
        out += "[tmps_l]";
    }
    return out;
  }
  std::string line_of(size_t k) const { return "#line " + std::to_string(t_[k].line) + " " + file_lit_ + "\n"; }

  // The hoisted array for a lane value declared by s: its type without top-level const.
  std::string hoisted(const Stmt& s) const {
    size_t last_star = s.b;
    bool star = false;
    for (size_t k = s.b; k < s.name; ++k)
      if (c_.is(k, "*")) { last_star = k; star = true; }
    std::string type;
    for (size_t k = s.b; k < s.name; ++k) {
      const std::string& w = t_[k].text;
      if (w == "auto") refuse("a lane value declared `auto`");
      if ((w == "const" || w == "constexpr" || w == "static") && (!star || k > last_star)) continue;
      if (!type.empty()) type += ' ';
      type += w;
    }
    const size_t stop = s.init ? s.init - 1 : s.e - 1;
    if (soa(t_[s.name].text)) {
      const auto vec = soa_type(t_[s.name].text);
      return "::tmps_sim::soa<" + vec.first + ", " + std::to_string(vec.second) + "> " + t_[s.name].text + ";\n";
    }
    return type + " " + t_[s.name].text + "[32]" + render(s.name + 1, stop, false) + ";\n";
  }

  // A statement of a lane region, rewritten.
  std::string lane_stmt(const Stmt& s) const {
    // Per lane, a matrix is only the first operand of simdgroup_load/store (its lane's part).
    for (size_t k = s.b; k < s.e; ++k)
      if (is_matrix(k) && !(k >= 2 && c_.is(k - 1, "(") && (c_.is(k - 2, "simdgroup_load") || c_.is(k - 2, "simdgroup_store"))))
        refuse("a simdgroup_matrix used per lane other than by simdgroup_load/store (line " + std::to_string(t_[k].line) + ")");
    if (s.kind == Stmt::Simple && s.is_decl && arrayed(t_[s.name].text)) {
      if (!s.init) return "";
      if (c_.is(s.init, "{")) refuse("a brace initialiser of a lane value");
      return line_of(s.b) + set_lane(t_[s.name].text, render_value(s.init, s.e - 1));
    }
    check_jumps(s, 0);
    if (s.kind == Stmt::Simple && s.is_decl && s.init && !c_.is(s.init, "{"))
      return line_of(s.b) + render(s.b, s.init, true) + " " + render_value(s.init, s.e - 1) + ";\n";
    if (s.kind == Stmt::Simple && !s.is_decl && c_.ident(s.b) && c_.is(s.b + 1, "=")) {
      if (soa(t_[s.b].text)) return line_of(s.b) + set_lane(t_[s.b].text, render_value(s.b + 2, s.e - 1));
      return line_of(s.b) + render(s.b, s.b + 2, true) + " " + render_value(s.b + 2, s.e - 1) + ";\n";
    }
    return line_of(s.b) + render(s.b, s.e, true) + "\n";
  }
  // A value per lane: `c ? x : y` of two locals or numbers as ::tmps_sim::pick (tmps_metal_simd.h).
  std::string render_value(size_t b, size_t e) const {
    size_t q = 0, colon = 0;
    int depth = 0;
    for (size_t k = b; k < e; ++k) {
      if (c_.is(k, "(") || c_.is(k, "[") || c_.is(k, "{")) ++depth;
      if (c_.is(k, ")") || c_.is(k, "]") || c_.is(k, "}")) --depth;
      if (depth != 0) continue;
      if (c_.is(k, "?")) {
        if (q) return render(b, e, true);
        q = k;
      }
      if (c_.is(k, ":") && q && !colon) colon = k;
      if (c_.is(k, ",") || is_assign(t_[k])) return render(b, e, true);
    }
    auto plain = [&](size_t k) {  // a number, or a local scalar, vector or pointer (not a reference or an array)
      if (t_[k].kind == T::Number) return true;
      if (!c_.ident(k) || !is_local(t_[k].text) || is_matrix(k)) return false;
      const Stmt* d = locals_.at(t_[k].text).decl;
      if (d->kind != Stmt::Simple) return true;  // a for loop's counter
      for (size_t q = d->b; q < d->name; ++q)
        if (c_.is(q, "&") || c_.is(q, "&&")) return false;
      return !c_.is(d->name + 1, "[");
    };
    if (!q || !colon || q == b || colon != q + 2 || e != colon + 2 || !plain(q + 1) || !plain(colon + 1))
      return render(b, e, true);
    return "::tmps_sim::pick(" + render(b, q, true) + ", " + render(q + 1, q + 2, true) + ", " + render(colon + 1, e, true) + ")";
  }
  // break/continue must stay inside the lane loop; return is refused there.
  void check_jumps(const Stmt& s, int loops) const {
    if (s.kind == Stmt::Return) refuse("a `return` before the end of the kernel");
    if (s.kind == Stmt::Jump && loops == 0) refuse("break/continue out of a region that runs per lane");
    const int inner = loops + (s.kind == Stmt::For || s.kind == Stmt::While || s.kind == Stmt::Do || s.kind == Stmt::Opaque);
    for (const auto& k : s.kids) check_jumps(*k, inner);
  }

  static constexpr const char* kLaneLoop =
      "for (unsigned tmps_l = 32u; tmps_l-- > 0u;) { tmps_lane_now = tmps_l;\n";

  void flush(std::vector<const Stmt*>& region, std::string& out) const {
    if (region.empty()) return;
    // A lane value declared and used in this region only stays a local of the lane loop (a
    // register), not an array of 32.
    for (const Stmt* s : region) {
      if (!(s->kind == Stmt::Simple && s->is_decl && arrayed(t_[s->name].text))) continue;
      bool inside = true;
      for (size_t k : uses_.at(t_[s->name].text)) {
        bool in = false;
        for (const Stmt* r : region) in = in || (k >= r->b && k < r->e);
        inside = inside && in;
      }
      if (inside) scalars_.insert(t_[s->name].text);
    }
    std::string body;
    for (const Stmt* s : region) {
      if (s->kind == Stmt::Simple && s->is_decl && arrayed(t_[s->name].text)) out += hoisted(*s);
      body += lane_stmt(*s);
    }
    out += kLaneLoop + body + "}\n";
    region.clear();
  }

  void emit_list(const std::vector<const Stmt*>& list, std::string& out, bool top) {
    std::vector<const Stmt*> region;
    for (size_t i = 0; i < list.size(); ++i) {
      const Stmt& s = *list[i];
      if (s.kind == Stmt::Block) {  // names are unique (collect): a block's statements join the list
        flush(region, out);
        std::vector<const Stmt*> kids;
        for (const auto& k : s.kids) kids.push_back(k.get());
        emit_list(kids, out, top && i + 1 == list.size());
        continue;
      }
      if (s.kind == Stmt::Return) {
        if (!(top && i + 1 == list.size())) refuse("a `return` before the end of the kernel");
        continue;
      }
      if (whole_matrix(s)) {  // once for the SIMD-group (tmps_metal_matrix.h, sg_load_all)
        flush(region, out);
        out += line_of(s.b) + "::tmps_sim::" + (t_[s.b].text == "simdgroup_load" ? "sg_load_all" : "sg_store_all") +
               "(tmps_lane_now, " + render(s.b + 2, s.e, false) + "\n";
        continue;
      }
      if (!s.sync) {
        if (stmt_uniform(s) && s.kind != Stmt::Jump) {
          flush(region, out);
          check_uniform_matrix_use(s);
          out += line_of(s.b) + render(s.b, s.e, false) + "\n";
        } else if (s.kind == Stmt::Jump) {
          flush(region, out);  // a uniform break/continue of a loop that holds a sync point
          out += render(s.b, s.e, false) + "\n";
        } else {
          region.push_back(&s);
        }
        continue;
      }
      flush(region, out);
      switch (s.kind) {
        case Stmt::Block: {
          std::vector<const Stmt*> kids;
          for (const auto& k : s.kids) kids.push_back(k.get());
          out += "{\n";
          emit_list(kids, out, false);
          out += "}\n";
          break;
        }
        case Stmt::If:
        case Stmt::While:
        case Stmt::For: {
          if (!uniform_range(s.hb, s.he, true) || !for_decl_uniform(s))
            refuse("a barrier or SIMD-group function under control flow that differs between lanes (line " +
                   std::to_string(t_[s.b].line) + ")");
          out += line_of(s.b) + render(s.b, s.he + 1, false) + " {\n";
          emit_list({s.kids[0].get()}, out, false);
          out += "}\n";
          if (s.kids.size() > 1) {
            out += "else {\n";
            emit_list({s.kids[1].get()}, out, false);
            out += "}\n";
          }
          break;
        }
        case Stmt::Simple:
          emit_sync(s, out);
          break;
        default:
          refuse("a barrier or SIMD-group function inside do/switch");
      }
    }
    flush(region, out);
  }

  // `simdgroup_load(m, ...);` or `simdgroup_store(m, ...);` whose other operands are the same in
  // every lane: the whole matrix at once.
  bool whole_matrix(const Stmt& s) const {
    if (s.kind != Stmt::Simple || s.is_decl || !(c_.is(s.b, "simdgroup_load") || c_.is(s.b, "simdgroup_store"))) return false;
    if (!c_.is(s.b + 1, "(") || c_.match(s.b + 1) + 2 != s.e || !is_matrix(s.b + 2) || !c_.is(s.b + 3, ",")) return false;
    return uniform_range(s.b + 4, s.e - 2, false);
  }

  // Run once for the SIMD-group, a matrix is only declared (and filled).
  void check_uniform_matrix_use(const Stmt& s) const {
    for (size_t k = s.b; k < s.e; ++k)
      if (is_matrix(k) && !(s.kind == Stmt::Simple && s.is_decl && k == s.name))
        refuse("a simdgroup_matrix used other than by simdgroup_load/store/multiply (line " + std::to_string(t_[k].line) + ")");
  }

  // `simdgroup_multiply[_accumulate](d, a, b[, c]);` on matrices: once, between lane loops
  // (every lane's loads are done), as the shim's whole-matrix multiply.
  void emit_multiply(const Stmt& s, size_t at, std::string& out) const {
    const size_t close = c_.match(at + 1);
    if (s.is_decl || at != s.b || close + 2 != s.e) refuse("a simdgroup_matrix multiply inside an expression");
    size_t args = 0;
    for (size_t k = at + 2; k < close; k += 2, ++args)
      if (!is_matrix(k) || !(c_.is(k + 1, ",") || k + 1 == close)) refuse("a simdgroup_matrix multiply of other than named matrices");
    if (args != (t_[at].text == "simdgroup_multiply" ? 3u : 4u)) refuse("a simdgroup_matrix multiply of other than named matrices");
    out += line_of(s.b) + render(s.b, s.e, false) + "\n";
  }

  void emit_sync(const Stmt& s, std::string& out) {
    size_t calls = 0, at = 0;
    for (size_t k = s.b; k < s.e; ++k)
      if (c_.sync_at(k)) { ++calls; at = k; }
    const std::string& fn = t_[at].text;
    if (calls != 1) refuse("several SIMD-group functions in one statement (line " + std::to_string(t_[s.b].line) + ")");
    if (fn == "simdgroup_multiply_accumulate" || fn == "simdgroup_multiply") return emit_multiply(s, at, out);
    if (fn == "threadgroup_barrier" || fn == "simdgroup_barrier") {
      if (at != s.b) refuse("a barrier inside an expression");
      // A SIMD-group runs in step here: simdgroup_barrier has nothing to wait for.
      if (fn == "threadgroup_barrier") out += line_of(s.b) + render(s.b, s.e, false) + "\n";
      return;
    }
    // Evaluated twice per lane (deposit, then result): everything but the target must be pure.
    const size_t from = s.is_decl ? s.init : s.b;
    if (!from) refuse("a SIMD-group function without a result");
    for (size_t k = from; k < s.e - 1; ++k) {
      const Tok& x = t_[k];
      if (x.kind == T::Punct) {
        const std::string& p = x.text;
        if (p == "->" || ((p == "*" || p == "&") && unary_at(k, from))) refuse("a SIMD-group function operand read through a pointer");
        if (p == "[" && !(k > from && c_.ident(k - 1) && is_local(t_[k - 1].text)) && !c_.is(k - 1, "]"))
          refuse("a SIMD-group function operand read through a pointer");
        if (p == "++" || p == "--") refuse("a SIMD-group function operand with a side effect");
        if (s.is_decl && is_assign(x)) refuse("a SIMD-group function operand with a side effect");
      } else if (x.kind == T::Ident && c_.is(k + 1, "(") && !pure(x.text) && k != at &&
                 !(k > from && c_.is(k - 1, "::"))) {
        refuse("a call of '" + x.text + "' beside a SIMD-group function");
      }
    }
    if (!s.is_decl) {  // `x = f(...)`: one assignment to a local, at the start
      size_t eq = s.b;
      while (eq < s.e && !c_.is(eq, "=")) ++eq;
      if (eq != s.b + 1 || !c_.ident(s.b) || !is_local(t_[s.b].text)) refuse("a SIMD-group function whose result is not assigned to a local");
      for (size_t k = eq + 1; k < s.e; ++k)
        if (is_assign(t_[k])) refuse("a SIMD-group function operand with a side effect");
    }
    if (s.is_decl && arrayed(t_[s.name].text)) out += hoisted(s);
    if (fast_shuffle(s, at, out)) return;
    const std::string st = lane_stmt(s);
    out += "{ ::tmps_sim::sg_ctx* tmps_sg = &tmps_sgc; tmps_sg->phase = 1u;\n";
    out += std::string(kLaneLoop) + "tmps_sgc.lane = tmps_l;\n" + st + "}\n";
    out += "tmps_sgc.phase = 2u; tmps_sgc.active = tmps_active;\n";
    out += std::string(kLaneLoop) + "tmps_sgc.lane = tmps_l;\n" + st + "}\n}\n";
  }

  // `x = simd_shuffle_xor(a, m);` with a uniform mask: a shuffle of the lanes' values converted
  // to x's type, which is the conversion of the shuffled values (conversion is per lane): x's
  // own array is the exchange, permuted in place by the shim (tmps_metal_simd.h, sg_shuffle_xor).
  bool fast_shuffle(const Stmt& s, size_t at, std::string& out) const {
    if (t_[at].text != "simd_shuffle_xor") return false;
    const size_t target = s.is_decl ? s.name : s.b;
    if (!arrayed(t_[target].text)) return false;
    const size_t rhs = s.is_decl ? s.init : s.b + 2;
    const size_t open = at + 1, close = c_.match(open);
    if (rhs != at || close + 2 != s.e) return false;  // the call must be the whole right side
    size_t comma = 0;
    int depth = 0;
    for (size_t k = open + 1; k < close; ++k) {
      if (c_.is(k, "(") || c_.is(k, "[") || c_.is(k, "{")) ++depth;
      if (c_.is(k, ")") || c_.is(k, "]") || c_.is(k, "}")) --depth;
      if (depth == 0 && c_.is(k, ",")) {
        if (comma) return false;
        comma = k;
      }
    }
    if (!comma || !uniform_range(comma + 1, close, false)) return false;
    const std::string x = t_[target].text;
    out += std::string(kLaneLoop) + line_of(s.b) + set_lane(x, render(open + 1, comma, true)) + "}\n";
    out += line_of(s.b) + "::tmps_sim::sg_shuffle_xor(" + x + ", (unsigned)(" + render(comma + 1, close, false) + "));\n";
    return true;
  }

  const Collapser& c_;
  const std::vector<Tok>& t_;
  std::set<std::string> vparams_, params_;
  std::set<std::string> linear_tids_;  // parameters holding thread_index_in_threadgroup
  std::set<std::string> pure_helpers_;  // the source's own functions that are pure (pure_helpers)
  std::set<std::string> matrices_;     // simdgroup_matrix locals: one whole matrix per SIMD-group
  std::map<std::string, Local> locals_;
  std::map<std::string, std::vector<size_t>> uses_;  // a local's name tokens, in the body
  mutable std::set<std::string> scalars_;            // lane values local to one region (flush)
  mutable std::map<std::string, std::pair<std::string, int>> soa_;  // soa_type, once per name
  std::map<const Stmt*, std::string> for_decls_;
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> init_ranges_;
  bool changed_ = false;
  std::string file_lit_;
};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The source's functions outside the kernels whose results depend on their arguments alone:
// parameters by value (no pointer, reference, array or address space), a body without memory
// access ([, ->, unary * or &), address spaces or statics, calling only pure functions (to a
// fixpoint: helpers call helpers). MSL has no writable program-scope variables. Such a call may
// run once for the SIMD-group (the compiler's integer division helpers in loop bounds).
std::set<std::string> pure_helpers(const Collapser& c, const std::vector<std::pair<size_t, size_t>>& kernel_bodies) {
  struct Fn { std::string name; size_t pb, pe, bb, be; };
  std::vector<Fn> fns;
  int depth = 0;
  for (size_t i = 0; i < c.t_.size(); ++i) {
    if (c.is(i, "{")) {
      if (depth == 0 && i > 0 && c.is(i - 1, ")")) {
        bool kernel = false;
        for (const auto& r : kernel_bodies) kernel = kernel || r.first == i;
        size_t open = i - 1;
        int d = 0;
        for (;; --open) {  // the '(' of the parameter list
          if (c.is(open, ")")) ++d;
          if (c.is(open, "(") && --d == 0) break;
          if (open == 0) break;
        }
        if (!kernel && open > 0 && c.ident(open - 1)) fns.push_back({c.t_[open - 1].text, open + 1, i - 1, i + 1, c.match(i)});
      }
      ++depth;
    } else if (c.is(i, "}")) {
      --depth;
    }
  }
  static const std::set<std::string> banned = {"device", "threadgroup", "constant", "thread", "static", "asm", "volatile"};
  // By name (a call does not say which overload): a name is pure when all its definitions are.
  std::set<std::string> pure;
  std::vector<bool> fn_pure(fns.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t fi = 0; fi < fns.size(); ++fi) {
      const Fn& f = fns[fi];
      if (fn_pure[fi]) continue;
      bool ok = true;
      for (size_t k = f.pb; k < f.pe && ok; ++k)
        ok = !(c.is(k, "*") || c.is(k, "&") || c.is(k, "&&") || c.is(k, "[") || (c.ident(k) && banned.count(c.t_[k].text)));
      for (size_t k = f.bb; k < f.be && ok; ++k) {
        const Tok& x = c.t_[k];
        if (c.is(k, "[") || c.is(k, "->") || (c.ident(k) && banned.count(x.text))) ok = false;
        if ((c.is(k, "*") || c.is(k, "&")) && c.unary_at(k, f.bb)) ok = false;
        if (x.kind == T::Ident && c.is(k + 1, "(") && !(k > 0 && (c.is(k - 1, ".") || c.is(k - 1, "->"))) &&
            !pure_functions().count(x.text) && !pure.count(x.text) && x.text != "if" && x.text != "while" &&
            x.text != "for" && x.text != "return" && x.text != "switch" && x.text != "sizeof")
          ok = false;
      }
      if (ok) {
        fn_pure[fi] = true;
        bool all = true;
        for (size_t gi = 0; gi < fns.size(); ++gi) all = all && (fns[gi].name != f.name || fn_pure[gi]);
        if (all) pure.insert(f.name);
        changed = true;
      }
    }
  }
  return pure;
}

// The kernel's definition: `NAME (` ... `)` `{`, preceded by `void`. Returns the '(' index.
size_t find_kernel(const Collapser& c, const std::string& name) {
  size_t found = 0, count = 0;
  for (size_t i = 1; i + 1 < c.t_.size(); ++i)
    if (c.ident(i) && c.t_[i].text == name && c.is(i + 1, "(") && c.is(i - 1, "void")) {
      size_t close = c.match(i + 1);
      if (c.is(close + 1, "{")) { found = i + 1; ++count; }
    }
  if (count != 1) refuse("kernel definition not found once");
  return found;
}

}  // namespace

namespace {
std::mutex g_counts_mu;
std::map<std::string, uint64_t>& counts() {
  static std::map<std::string, uint64_t> m;
  return m;
}
}  // namespace

void count_collapse(const std::string& outcome) {
  std::lock_guard<std::mutex> lock(g_counts_mu);
  ++counts()[outcome];
}

std::vector<std::pair<std::string, uint64_t>> collapse_counts() {
  std::lock_guard<std::mutex> lock(g_counts_mu);
  return {counts().begin(), counts().end()};
}

bool position_varies_in_simdgroup(const std::string& field) {
  return field == "thread_position_in_grid" || field == "thread_position_in_threadgroup" ||
         field == "thread_index_in_threadgroup" || field == "thread_index_in_simdgroup" ||
         field == "thread_index_in_quadgroup" || field == "quadgroup_index_in_threadgroup";
}

SimdCollapse collapse_kernel(const std::string& src, const KernelDecl& kd, const KernelExtra& kx,
                             const std::vector<KernelExtra>& all_kernels, size_t index, const std::string& filename) {
  SimdCollapse out;
  try {
    std::string name = kx.cpp_name;
    if (name.rfind("::", 0) == 0) name = name.substr(2);
    if (name.find("::") != std::string::npos) refuse("a kernel inside a namespace");
    const std::vector<Tok> toks = tokenize(src);
    Collapser c(toks, filename);
    const size_t open_paren = find_kernel(c, name);
    const size_t close_paren = c.match(open_paren);
    const size_t body_open = close_paren + 1, body_close = c.match(body_open);
    // Helper functions that synchronise would run per lane: refuse (other kernels' bodies may).
    std::vector<std::pair<size_t, size_t>> bodies;
    for (const KernelExtra& k : all_kernels) {
      std::string n = k.cpp_name.rfind("::", 0) == 0 ? k.cpp_name.substr(2) : k.cpp_name;
      if (n.find("::") != std::string::npos) continue;
      size_t p = find_kernel(c, n), b = c.match(p) + 1;
      bodies.push_back({b, c.match(b)});
    }
    for (size_t i = 0; i < toks.size(); ++i) {
      bool inside = false;
      for (const auto& r : bodies) inside = inside || (i >= r.first && i <= r.second);
      if (!inside && c.sync_at(i) && c.is(i + 1, "(")) refuse("a helper function calls SIMD-group functions or barriers");
      if (!inside && c.ident(i) && Collapser::matrix_word(toks[i].text)) refuse("a helper function uses simdgroup_matrix");
    }
    // Parameters: names, and which are per-lane positions.
    std::set<std::string> params, vparams, linear_tids;
    std::vector<std::string> param_text;
    std::string prologue;
    {
      size_t b = open_paren + 1, pi = 0;
      for (size_t k = b; k <= close_paren; ++k) {
        if (k == close_paren || c.is(k, ",")) {
          if (k == b) break;
          size_t n = k - 1;
          while (n > b && !c.ident(n)) --n;
          const std::string pname = toks[n].text;
          params.insert(pname);
          const bool varies = pi < kd.params.size() && kd.params[pi].kind == ParamInfo::Kind::Position &&
                              position_varies_in_simdgroup(kx.params[pi].field);
          std::string text, type;
          for (size_t q = b; q < n; ++q)
            if (toks[q].text != "const") type += toks[q].text + " ";
          if (varies) {
            // Read through a pointer the lanes' positions would be checked accesses (memcheck's
            // slow path: the SIMD-group's stack); a local copy is not.
            vparams.insert(pname);
            if (kx.params[pi].field == "thread_index_in_threadgroup") linear_tids.insert(pname);
            text = "const " + type + "* tmps_in_" + pname;
            prologue += type + pname + "[32];\n::tmps_sim::copy_lanes(" + pname + ", tmps_in_" + pname + ");\n";
          } else {
            for (size_t q = b; q < k; ++q) text += toks[q].text + " ";
          }
          param_text.push_back(text);
          b = k + 1;
          ++pi;
        } else if (c.is(k, "(") || c.is(k, "[") || c.is(k, "{")) {
          k = c.match(k);
        } else if (c.is(k, "<")) {  // template arguments in a parameter type
          int d = 0;
          for (; k < close_paren; ++k) {
            if (c.is(k, "<")) ++d;
            if (c.is(k, ">") && --d == 0) break;
          }
        }
      }
    }
    // Barriers alone cost the fiber path little (a switch per thread and barrier), and the lane
    // loops' arrays cost more than that when nothing else is saved (measured: benchmarks/
    // bench_sim.py's int8 matmul ran 0.68x collapsed): only kernels with SIMD-group functions.
    bool simd_functions = false;
    for (size_t k = body_open; k < body_close; ++k)
      simd_functions = simd_functions || (c.sync_at(k) && toks[k].text != "threadgroup_barrier" && toks[k].text != "simdgroup_barrier");
    if (!simd_functions) refuse("barriers only (no SIMD-group function): fibers are as fast");
    size_t i = body_open;
    std::unique_ptr<Stmt> body = c.parse(i, body_close + 1);
    Rewriter r(c, vparams, params, linear_tids);
    r.pure_helpers_ = pure_helpers(c, bodies);
    r.file_lit_ = quoted(filename);
    r.analyse(*body);
    std::vector<const Stmt*> top;
    for (const auto& k : body->kids) top.push_back(k.get());
    std::string text;
    r.emit_list(top, text, true);
    std::ostringstream o;
    o << "#line " << kd.line << " " << quoted(filename) << "\n";
    o << "static __attribute__((unused)) void tmps_sg_fn_" << index << "(";
    for (const auto& p : param_text) o << p << ", ";
    o << "tmps_u32 tmps_active, const volatile tmps_u32** tmps_lane_at) {\n::tmps_sim::sg_ctx tmps_sgc;\n(void)tmps_sgc;\n"
      << "tmps_u32 tmps_lane_now = 31u - (tmps_u32)__builtin_clz(tmps_active);\n::tmps_sim::publish_lane(tmps_lane_at, &tmps_lane_now);\n"
      << prologue
      << text << "}\n";
    out.ok = true;
    out.function = o.str();
  } catch (const Refusal& e) {
    out.ok = false;
    out.reason = e.why;
  }
  return out;
}

}  // namespace tmps
