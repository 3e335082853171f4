// MSL scanner: a token scanner, not a C++ parser. It understands just enough of MSL to find
// kernel signatures (comments, literals, preprocessor lines, bracket nesting, attributes) and
// the few MSL constructs that plain C++ does not accept, recorded as edits that the simulator
// applies (sim/msl_to_cpp.cpp). Everything else is kept byte for byte so the C++ compiler's
// diagnostics point at the user's lines.
#include "msl_scanner.h"
#include "msl_annotations.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string_view>

namespace tmps {
namespace {

// ------------------------------------------------------------------------------------------
// Lexer

enum class Tok { Ident, Number, String, Char, Punct, Preproc };

struct Token {
  Tok kind;
  size_t begin;  // byte offsets into the source
  size_t end;
  uint32_t line;
  std::string_view text;
};

[[noreturn]] void fail(const std::string& file, uint32_t line, const std::string& msg) {
  throw CompileError(file + ":" + std::to_string(line) + ": error: " + msg);
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file, size_t begin, size_t end, uint32_t line)
      : s_(src), file_(file), i_(begin), end_(end), line_(line) {}

  // `directives`: recognise preprocessor lines (off when re-lexing a directive's body).
  std::vector<Token> run(bool directives) {
    std::vector<Token> out;
    bool line_start = true;
    int dead_depth = 0;  // > 0 inside `#if 0` (nesting counted), tokens there are dropped
    while (i_ < end_) {
      char c = s_[i_];
      if (c == '\n') { ++line_; ++i_; line_start = true; continue; }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i_; continue; }
      if (c == '\\' && peek(1) == '\n') { i_ += 2; ++line_; continue; }
      if (c == '/' && peek(1) == '/') { skip_line_comment(); continue; }
      if (c == '/' && peek(1) == '*') { skip_block_comment(); continue; }
      if (directives && c == '#' && line_start) {
        Token t = directive();
        update_dead(t, dead_depth);
        if (dead_depth == 0 || is_conditional(t)) out.push_back(t);
        line_start = true;
        continue;
      }
      line_start = false;
      Token t = next();
      if (dead_depth == 0) out.push_back(t);
    }
    return out;
  }

 private:
  char peek(size_t k) const { return i_ + k < end_ ? s_[i_ + k] : '\0'; }

  Token make(Tok kind, size_t b, uint32_t line) { return Token{kind, b, i_, line, s_.substr(b, i_ - b)}; }

  void skip_line_comment() {
    while (i_ < end_ && s_[i_] != '\n') {
      if (s_[i_] == '\\' && peek(1) == '\n') { ++line_; ++i_; }  // spliced line continues the comment
      ++i_;
    }
  }

  void skip_block_comment() {
    uint32_t start = line_;
    i_ += 2;
    while (i_ < end_ && !(s_[i_] == '*' && peek(1) == '/')) {
      if (s_[i_] == '\n') ++line_;
      ++i_;
    }
    if (i_ >= end_) fail(file_, start, "unterminated /* comment");
    i_ += 2;
  }

  void skip_quoted(char q) {
    uint32_t start = line_;
    ++i_;
    while (i_ < end_ && s_[i_] != q) {
      if (s_[i_] == '\\' && i_ + 1 < end_) { if (s_[i_ + 1] == '\n') ++line_; i_ += 2; continue; }
      if (s_[i_] == '\n') fail(file_, start, q == '"' ? "unterminated string literal" : "unterminated character literal");
      ++i_;
    }
    if (i_ >= end_) fail(file_, start, q == '"' ? "unterminated string literal" : "unterminated character literal");
    ++i_;
  }

  void skip_raw_string() {  // at the opening quote of R"delim( ... )delim"
    uint32_t start = line_;
    size_t open = s_.find('(', i_);
    if (open == std::string_view::npos || open >= end_) fail(file_, start, "malformed raw string literal");
    std::string close = ")" + std::string(s_.substr(i_ + 1, open - i_ - 1)) + "\"";
    size_t stop = s_.find(close, open + 1);
    if (stop == std::string_view::npos || stop + close.size() > end_) fail(file_, start, "unterminated raw string literal");
    for (size_t k = i_; k < stop; ++k) if (s_[k] == '\n') ++line_;
    i_ = stop + close.size();
  }

  Token directive() {
    size_t b = i_;
    uint32_t line = line_;
    while (i_ < end_ && s_[i_] != '\n') {
      char c = s_[i_];
      if (c == '\\' && peek(1) == '\n') { i_ += 2; ++line_; continue; }
      if (c == '/' && peek(1) == '*') { skip_block_comment(); continue; }
      if (c == '/' && peek(1) == '/') { skip_line_comment(); break; }
      if (c == '"' || c == '\'') { skip_quoted(c); continue; }
      ++i_;
    }
    return make(Tok::Preproc, b, line);
  }

  static std::string directive_name(const Token& t) {
    size_t k = 1;
    while (k < t.text.size() && (t.text[k] == ' ' || t.text[k] == '\t')) ++k;
    size_t b = k;
    while (k < t.text.size() && is_ident_char(t.text[k])) ++k;
    return std::string(t.text.substr(b, k - b));
  }
  static bool is_conditional(const Token& t) {
    std::string d = directive_name(t);
    return d == "if" || d == "ifdef" || d == "ifndef" || d == "elif" || d == "else" || d == "endif";
  }
  // Drops code under a literal `#if 0` (common for disabled kernels); other conditionals are
  // not evaluated.
  static void update_dead(const Token& t, int& dead) {
    std::string d = directive_name(t);
    if (d == "if" || d == "ifdef" || d == "ifndef") {
      if (dead > 0) { ++dead; return; }
      std::string rest(t.text.substr(t.text.find(d) + d.size()));
      rest.erase(std::remove_if(rest.begin(), rest.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; }), rest.end());
      if (d == "if" && rest == "0") dead = 1;
    } else if (d == "endif") {
      if (dead > 0) --dead;
    } else if ((d == "else" || d == "elif") && dead == 1) {
      dead = 0;
    }
  }

  Token next() {
    size_t b = i_;
    uint32_t line = line_;
    char c = s_[i_];
    if (is_ident_start(c)) {
      while (i_ < end_ && is_ident_char(s_[i_])) ++i_;
      std::string_view id = s_.substr(b, i_ - b);
      if (i_ < end_ && s_[i_] == '"' && (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR")) {
        skip_raw_string();
        return make(Tok::String, b, line);
      }
      if (i_ < end_ && (s_[i_] == '"' || s_[i_] == '\'') && (id == "u8" || id == "u" || id == "U" || id == "L")) {
        char q = s_[i_];
        skip_quoted(q);
        return make(q == '"' ? Tok::String : Tok::Char, b, line);
      }
      return make(Tok::Ident, b, line);
    }
    if (is_digit(c) || (c == '.' && is_digit(peek(1)))) {  // a preprocessing number
      ++i_;
      while (i_ < end_) {
        char d = s_[i_];
        char prev = s_[i_ - 1];
        if ((d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) { ++i_; continue; }
        if (d == '\'' && i_ + 1 < end_ && is_ident_char(s_[i_ + 1])) { i_ += 2; continue; }
        if (is_ident_char(d) || d == '.') { ++i_; continue; }
        break;
      }
      return make(Tok::Number, b, line);
    }
    if (c == '"') { skip_quoted('"'); return make(Tok::String, b, line); }
    if (c == '\'') { skip_quoted('\''); return make(Tok::Char, b, line); }
    if ((c == ':' && peek(1) == ':') || (c == '-' && peek(1) == '>')) {
      i_ += 2;
      return make(Tok::Punct, b, line);
    }
    ++i_;
    return make(Tok::Punct, b, line);
  }

  std::string_view s_;
  const std::string& file_;
  size_t i_;
  size_t end_;
  uint32_t line_;
};

// ------------------------------------------------------------------------------------------
// Scanner helpers

bool is(const Token& t, std::string_view text) { return t.kind != Tok::String && t.kind != Tok::Char && t.text == text; }

bool is_address_space(std::string_view w) {
  return w == "device" || w == "constant" || w == "threadgroup" || w == "thread" || w == "threadgroup_imageblock" ||
         w == "ray_data" || w == "object_data";
}
bool is_cv(std::string_view w) { return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict"; }

// Index of the bracket closing toks[open] (one of ( [ {), or toks.size() if unbalanced.
size_t match_close(const std::vector<Token>& toks, size_t open, size_t limit) {
  int depth = 0;
  for (size_t i = open; i < limit; ++i) {
    if (toks[i].kind != Tok::Punct) continue;
    char c = toks[i].text[0];
    if (toks[i].text.size() != 1) continue;
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return toks.size();
}

// The ranges of toks (open, close) between commas outside brackets. `angles`: also outside `<...>`
// at bracket depth 0 (template arguments in a declaration).
std::vector<std::pair<size_t, size_t>> split_commas(const std::vector<Token>& toks, size_t open, size_t close, bool angles) {
  std::vector<std::pair<size_t, size_t>> ranges;
  int depth = 0, angle = 0;
  size_t b = open + 1;
  for (size_t i = open + 1; i < close; ++i) {
    const Token& t = toks[i];
    if (t.kind != Tok::Punct) continue;
    if (is(t, "(") || is(t, "[") || is(t, "{")) ++depth;
    else if (is(t, ")") || is(t, "]") || is(t, "}")) --depth;
    else if (angles && depth == 0 && is(t, "<")) ++angle;
    else if (angles && depth == 0 && is(t, ">") && angle > 0) --angle;
    else if (depth == 0 && angle == 0 && is(t, ",")) { ranges.push_back({b, i}); b = i + 1; }
  }
  if (b < close) ranges.push_back({b, close});
  return ranges;
}

bool attr_open(const std::vector<Token>& toks, size_t i, size_t limit) {
  return i + 1 < limit && is(toks[i], "[") && is(toks[i + 1], "[");
}

// Joins tokens into readable type text: one space between words, none around punctuation,
// a space after commas ("vec<float, 4>", "unsigned int", "metal::float4").
std::string join(const std::vector<Token>& toks, size_t b, size_t e) {
  std::string out;
  for (size_t i = b; i < e; ++i) {
    const Token& t = toks[i];
    bool word = t.kind != Tok::Punct;
    if (!out.empty()) {
      char last = out.back();
      bool last_word = is_ident_char(last) || last == '"' || last == '\'';
      if ((word && last_word) || last == ',') out += ' ';
    }
    out += std::string(t.text);
  }
  return out;
}

std::string join_list(const std::vector<const Token*>& toks) {
  std::vector<Token> copy;
  for (const Token* t : toks) copy.push_back(*t);
  return join(copy, 0, copy.size());
}

bool parse_uint(std::string_view text, uint64_t& value) {
  std::string s(text);
  while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L')) s.pop_back();
  s.erase(std::remove(s.begin(), s.end(), '\''), s.end());
  if (s.empty()) return false;
  int base = 10;
  size_t k = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { base = 16; k = 2; }
  else if (s.size() > 1 && s[0] == '0') { base = 8; k = 1; }
  value = 0;
  for (; k < s.size(); ++k) {
    char c = s[k];
    int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 99;
    if (d >= base) return false;
    value = value * base + d;
    if (value > 0xffffffffull) return false;
  }
  return true;
}

// One item of an attribute specifier: `buffer(2)` → name "buffer", args tokens "2".
struct AttrItem {
  std::string name;
  std::string text;                 // as written, without spaces
  std::vector<const Token*> args;   // tokens inside the parentheses
  uint32_t line = 0;
};

// Position attributes and the tmps_sim_thread field each one reads.
const std::map<std::string, std::string>& position_fields() {
  static const std::map<std::string, std::string> m = {
      {"thread_position_in_grid", "thread_position_in_grid"},
      {"thread_position_in_threadgroup", "thread_position_in_threadgroup"},
      {"threadgroup_position_in_grid", "threadgroup_position_in_grid"},
      {"threads_per_threadgroup", "threads_per_threadgroup"},
      {"dispatch_threads_per_threadgroup", "threads_per_threadgroup"},
      {"threadgroups_per_grid", "threadgroups_per_grid"},
      {"threads_per_grid", "threads_per_grid"},
      {"grid_size", "threads_per_grid"},
      {"grid_origin", ""},  // always 0,0,0 for our dispatches
      {"thread_index_in_threadgroup", "thread_index_in_threadgroup"},
      {"thread_index_in_simdgroup", "thread_index_in_simdgroup"},
      {"thread_execution_width", "threads_per_simdgroup"},
      {"threads_per_simdgroup", "threads_per_simdgroup"},
      {"simdgroup_index_in_threadgroup", "simdgroup_index_in_threadgroup"},
      {"simdgroups_per_threadgroup", "simdgroups_per_threadgroup"},
      {"dispatch_simdgroups_per_threadgroup", "simdgroups_per_threadgroup"},
      {"thread_index_in_quadgroup", "thread_index_in_quadgroup"},
      {"quadgroup_index_in_threadgroup", "quadgroup_index_in_threadgroup"},
      {"quadgroups_per_threadgroup", "quadgroups_per_threadgroup"},
      {"dispatch_quadgroups_per_threadgroup", "quadgroups_per_threadgroup"},
  };
  return m;
}

// ------------------------------------------------------------------------------------------
// The scan: kernels, their attributes, and the edits that turn MSL into C++.

class Scanner {
 public:
  Scanner(const std::string& src, const std::string& file) : src_(src), file_(file) {
    Lexer lex(src_, file_, 0, src_.size(), 1);
    for (const Token& t : lex.run(true)) {
      if (t.kind == Tok::Preproc) preproc_.push_back(t);
      else toks_.push_back(t);
    }
    qualifier_macros();
  }

  void scan() {
    mark_attributes();
    std::vector<std::string> scopes;  // namespace names; "\x01" for non-namespace braces
    size_t n = toks_.size();
    size_t stmt_start = 0;  // first token of the current declaration at this scope
    for (size_t i = 0; i < n; ++i) {
      const Token& t = toks_[i];
      if (attr_open(toks_, i, n)) {
        size_t close = match_close(toks_, i, n);
        if (close >= n) fail(file_, t.line, "unbalanced [[ in attribute");
        std::string role = function_role_attr(i, close);
        if (!role.empty() && at_namespace_scope(scopes)) {
          i = function(stmt_start, i, close + 1, role == "kernel", scopes);
          stmt_start = i + 1;
          continue;
        }
        i = close;
        continue;
      }
      if (t.kind == Tok::Ident && (t.text == "kernel" || t.text == "vertex" || t.text == "fragment") &&
          at_namespace_scope(scopes)) {
        i = function(stmt_start, i, i + 1, t.text == "kernel", scopes);
        stmt_start = i + 1;
        continue;
      }
      if (is(t, "{")) {
        scopes.push_back(namespace_name(stmt_start, i));
        stmt_start = i + 1;
      } else if (is(t, "}")) {
        if (!scopes.empty()) scopes.pop_back();
        stmt_start = i + 1;
      } else if (is(t, ";")) {
        stmt_start = i + 1;
      }
    }
    needs_fibers_ = scan_needs_fibers();
    for (auto& k : kernels_) k.needs_fibers = needs_fibers_;
    half_literals();
    bfloat_casts();
  }

  std::vector<KernelDecl> kernels_;
  std::vector<KernelExtra> extras_;
  std::vector<Edit> edits_;
  bool needs_fibers_ = false;

 private:
  static Edit blank_text(const std::string& src, size_t b, size_t e) {
    std::string s = src.substr(b, e - b);
    for (char& c : s) if (c != '\n') c = ' ';
    return Edit{b, e, s};
  }
  Edit blank(size_t b, size_t e) const { return blank_text(src_, b, e); }

  void mark_attributes() {
    in_attr_.assign(toks_.size(), false);
    for (size_t i = 0; i < toks_.size(); ++i) {
      if (!attr_open(toks_, i, toks_.size())) continue;
      size_t close = match_close(toks_, i, toks_.size());
      if (close >= toks_.size()) fail(file_, toks_[i].line, "unbalanced [[ in attribute");
      for (size_t k = i; k <= close; ++k) in_attr_[k] = true;
      i = close;
    }
  }

  // Items of the attribute specifier toks_[open .. close] (`[[a, b(1)]]`).
  std::vector<AttrItem> attr_items(size_t open, size_t close) const {
    std::vector<AttrItem> items;
    size_t i = open + 2;
    size_t stop = close - 1;  // the inner ']'
    while (i < stop) {
      AttrItem item;
      item.line = toks_[i].line;
      size_t b = i;
      int depth = 0;
      while (i < stop && !(depth == 0 && is(toks_[i], ","))) {
        if (is(toks_[i], "(")) ++depth;
        if (is(toks_[i], ")")) --depth;
        ++i;
      }
      size_t e = i;
      // name: identifiers and :: up to '(' (e.g. metal::buffer)
      size_t k = b;
      std::string name;
      while (k < e && !is(toks_[k], "(")) name += std::string(toks_[k++].text);
      if (name.rfind("metal::", 0) == 0) name = name.substr(7);
      item.name = name;
      if (k < e) {
        size_t pc = match_close(toks_, k, e);
        for (size_t a = k + 1; a < pc && a < e; ++a) item.args.push_back(&toks_[a]);
      }
      for (size_t a = b; a < e; ++a) item.text += std::string(toks_[a].text);
      if (!item.name.empty()) items.push_back(item);
      if (i < stop) ++i;  // the comma
    }
    return items;
  }

  std::string function_role_attr(size_t open, size_t close) const {
    for (const AttrItem& a : attr_items(open, close))
      if (a.name == "kernel" || a.name == "vertex" || a.name == "fragment") return a.name;
    return "";
  }

  std::string namespace_name(size_t b, size_t brace) const {
    size_t i = b;
    while (i < brace && (is(toks_[i], "inline") || attr_open(toks_, i, brace))) {
      i = is(toks_[i], "inline") ? i + 1 : match_close(toks_, i, brace) + 1;
    }
    if (i < brace && is(toks_[i], "extern") && i + 1 < brace && toks_[i + 1].kind == Tok::String) return "\x02";
    if (i >= brace || !is(toks_[i], "namespace")) return "\x01";
    std::string name;
    for (size_t k = i + 1; k < brace; ++k) {
      if (toks_[k].kind == Tok::Ident) name += (name.empty() ? "" : "::") + std::string(toks_[k].text);
    }
    return name;  // "" for an anonymous namespace
  }

  static bool at_namespace_scope(const std::vector<std::string>& scopes) {
    for (const std::string& s : scopes)
      if (s == "\x01") return false;
    return true;
  }

  static std::string qualified(const std::vector<std::string>& scopes, const std::string& name) {
    std::string q;
    for (const std::string& s : scopes) {
      if (s.empty() || s == "\x02") continue;  // anonymous namespace, extern "C" block
      if (s == "\x01") return "";               // inside a class or function: not callable
      q += "::" + s;
    }
    return q + "::" + name;
  }

  // Parses a function marked kernel/vertex/fragment. `marker_end` is the token after the
  // `kernel` keyword or the [[kernel]] specifier. Returns the index of its last token.
  size_t function(size_t head, size_t marker, size_t marker_end, bool is_kernel, const std::vector<std::string>& scopes) {
    size_t n = toks_.size();
    uint32_t line = toks_[marker].line;
    KernelDecl decl;
    KernelExtra extra;
    decl.line = line;
    decl.effect_threads = effect_threads_hint(toks_[head].line);
    std::string host_name;
    edits_.push_back(blank(toks_[marker].begin, toks_[marker_end - 1].end));  // `kernel` / [[kernel]]

    auto take_attrs = [&](size_t open, size_t close) {
      edits_.push_back(blank(toks_[open].begin, toks_[close].end));
      for (const AttrItem& a : attr_items(open, close)) {
        if (a.name == "max_total_threads_per_threadgroup") {
          extra.max_threads_expr = join_list(a.args);
          uint64_t v = 0;
          if (a.args.size() == 1 && parse_uint(a.args[0]->text, v)) decl.max_total_threads = uint32_t(v);
        } else if (a.name == "host_name" && a.args.size() == 1 && a.args[0]->kind == Tok::String) {
          std::string_view s = a.args[0]->text;
          host_name = std::string(s.substr(1, s.size() - 2));
        }
      }
    };

    // Before the marker: attributes, `template <...>`, storage words.
    for (size_t i = head; i < marker; ++i) {
      if (is(toks_[i], "template")) {
        if (!is_kernel) break;
        fail(file_, toks_[i].line, "template kernels are not supported by the simulator yet");
      }
      if (attr_open(toks_, i, marker)) {
        size_t close = match_close(toks_, i, marker);
        take_attrs(i, close);
        i = close;
      }
    }
    // From the marker to '(': return type, name, more attributes.
    size_t i = marker_end;
    size_t name_tok = n;
    std::vector<size_t> ret;
    for (; i < n && !is(toks_[i], "("); ++i) {
      if (is(toks_[i], ";") || is(toks_[i], "{") || is(toks_[i], "}")) fail(file_, toks_[i].line, "expected a function declaration after 'kernel'");
      if (attr_open(toks_, i, n)) {
        size_t close = match_close(toks_, i, n);
        take_attrs(i, close);
        i = close;
        continue;
      }
      if (is(toks_[i], "kernel")) {  // `[[kernel]] kernel`? tolerate
        edits_.push_back(blank(toks_[i].begin, toks_[i].end));
        continue;
      }
      if (is(toks_[i], "<") && is_kernel) fail(file_, toks_[i].line, "template kernels are not supported by the simulator yet");
      if (name_tok != n) ret.push_back(name_tok);
      name_tok = i;
    }
    if (i >= n || name_tok == n || toks_[name_tok].kind != Tok::Ident) fail(file_, line, "expected a function name and '(' after 'kernel'");
    size_t lp = i;
    size_t rp = match_close(toks_, lp, n);
    if (rp >= n) fail(file_, toks_[lp].line, "unbalanced '(' in the parameter list");
    std::string cpp_name(toks_[name_tok].text);
    decl.name = host_name.empty() ? cpp_name : host_name;

    if (is_kernel) {
      std::vector<std::string> ret_words;
      for (size_t r : ret)
        if (!is(toks_[r], "static") && !is(toks_[r], "inline") && !is(toks_[r], "extern")) ret_words.push_back(std::string(toks_[r].text));
      if (ret_words.size() != 1 || ret_words[0] != "void")
        fail(file_, toks_[name_tok].line, "kernel '" + decl.name + "' must return void");
    }

    // After ')': attributes, then a body or ';'.
    size_t k = rp + 1;
    for (; k < n && !is(toks_[k], "{") && !is(toks_[k], ";"); ++k) {
      if (attr_open(toks_, k, n)) {
        size_t close = match_close(toks_, k, n);
        take_attrs(k, close);
        k = close;
      }
    }
    if (k >= n) fail(file_, toks_[rp].line, "expected a body after the signature of '" + decl.name + "'");

    params(decl, extra, lp, rp, is_kernel);

    if (is(toks_[k], ";")) return k;  // a declaration only: the definition comes elsewhere
    size_t body_end = match_close(toks_, k, n);
    if (body_end >= n) fail(file_, toks_[k].line, "unbalanced '{' in the body of '" + decl.name + "'");
    if (!is_kernel) return body_end;

    for (const KernelDecl& other : kernels_)
      if (other.name == decl.name)
        fail(file_, line, "kernel '" + decl.name + "' is defined twice (first at line " + std::to_string(other.line) + ")");
    extra.cpp_name = qualified(scopes, cpp_name);
    if (extra.cpp_name.empty()) fail(file_, line, "kernel '" + decl.name + "' must be declared at namespace scope");
    threadgroup_decls(decl, k + 1, body_end);
    kernels_.push_back(decl);
    extras_.push_back(extra);
    return body_end;
  }

  [[noreturn]] void param_fail(uint32_t line, const KernelDecl& k, const std::string& pname, const std::string& msg) const {
    fail(file_, line, "kernel '" + k.name + "' parameter '" + pname + "': " + msg);
  }

  void params(KernelDecl& decl, KernelExtra& extra, size_t lp, size_t rp, bool is_kernel) {
    std::vector<std::pair<size_t, size_t>> ranges = split_commas(toks_, lp, rp, true);
    if (ranges.size() == 1 && ranges[0].second - ranges[0].first == 1 && is(toks_[ranges[0].first], "void")) ranges.clear();

    std::map<uint32_t, const ParamInfo*> buffers, groups;
    decl.params.reserve(ranges.size());
    for (size_t p = 0; p < ranges.size(); ++p) {
      auto [pb, pe] = ranges[p];
      // Attributes (blanked in the output) and the declaration tokens.
      std::vector<AttrItem> attrs;
      std::vector<size_t> d;
      for (size_t i = pb; i < pe; ++i) {
        if (attr_open(toks_, i, pe)) {
          size_t close = match_close(toks_, i, pe);
          edits_.push_back(blank(toks_[i].begin, toks_[close].end));
          for (AttrItem& a : attr_items(i, close)) attrs.push_back(a);
          i = close;
          continue;
        }
        d.push_back(i);
      }
      if (!is_kernel) continue;
      uint32_t pline = toks_[pb].line;
      std::string label = "#" + std::to_string(p);
      if (d.empty()) fail(file_, pline, "kernel '" + decl.name + "': empty parameter " + label);

      ParamInfo info;
      ParamExtra px;
      // Name: a trailing identifier that is not a qualifier and follows a type.
      size_t name_i = d.size();
      const Token& last = toks_[d.back()];
      if (d.size() >= 2 && last.kind == Tok::Ident && !is_cv(last.text) && !is(toks_[d[d.size() - 2]], "::")) name_i = d.size() - 1;
      if (name_i < d.size()) { info.name = std::string(last.text); pline = last.line; }
      std::string pname = info.name.empty() ? label : info.name;
      info.line = pline;

      int ptr = 0, ref = 0, ang = 0;
      bool coherent = false;
      std::vector<size_t> type_toks;
      std::string space_word;
      for (size_t k = 0; k < name_i; ++k) {
        const Token& t = toks_[d[k]];
        if (is(t, "<")) ++ang;
        if (is(t, ">") && ang > 0) --ang;
        // MSL 3.2 `coherent(device)` (whether the version has it is the shim's check).
        if (ang == 0 && is(t, "coherent") && k + 1 < name_i && is(toks_[d[k + 1]], "(")) {
          if (k + 3 >= name_i || !is(toks_[d[k + 2]], "device") || !is(toks_[d[k + 3]], ")"))
            param_fail(t.line, decl, pname, "expected coherent(device): the only coherence qualifier on a buffer");
          coherent = true;
          k += 3;
          continue;
        }
        if (ang == 0 && t.kind == Tok::Ident && qualifier_macros_.count(std::string(t.text))) continue;
        if (ang == 0 && (is(t, "(") || is(t, "[")))
          param_fail(t.line, decl, pname, "array and function parameters are not supported");
        if (ang == 0 && is(t, "*")) { ++ptr; continue; }
        if (ang == 0 && is(t, "&")) { ++ref; continue; }
        if (ang == 0 && t.kind == Tok::Ident && is_address_space(t.text)) {
          if (!space_word.empty() && space_word != t.text) param_fail(t.line, decl, pname, "more than one address space");
          space_word = std::string(t.text);
          continue;
        }
        if (ang == 0 && t.kind == Tok::Ident && is_cv(t.text)) continue;
        type_toks.push_back(d[k]);
      }
      if (ptr + ref > 1) param_fail(pline, decl, pname, "pointers to pointers and rvalue references cannot be bound");
      if (coherent && (space_word != "device" || ptr + ref == 0))
        param_fail(pline, decl, pname, "coherent(device) applies to device pointers and references");
      info.is_pointer = ptr == 1;
      {
        std::vector<const Token*> tt;
        for (size_t k : type_toks) tt.push_back(&toks_[k]);
        info.type = join_list(tt);
      }
      if (info.type.empty()) param_fail(pline, decl, pname, "missing type");
      px.is_void = info.type == "void";
      info.space = space_word == "device" ? ParamInfo::Space::Device
                   : space_word == "constant" ? ParamInfo::Space::Constant
                   : space_word == "threadgroup" ? ParamInfo::Space::Threadgroup
                   : ParamInfo::Space::Thread;
      if (!space_word.empty() && space_word != "device" && space_word != "constant" && space_word != "threadgroup" && space_word != "thread")
        param_fail(pline, decl, pname, "the " + space_word + " address space is not supported by the simulator");

      // Binding attribute.
      const AttrItem* binding = nullptr;
      for (const AttrItem& a : attrs) {
        bool known = a.name == "buffer" || a.name == "threadgroup" || position_fields().count(a.name);
        if (!known) param_fail(a.line, decl, pname, "unknown or unsupported attribute [[" + a.text + "]]");
        if (binding) param_fail(a.line, decl, pname, "more than one binding attribute ([[" + binding->text + "]] and [[" + a.text + "]])");
        binding = &a;
      }
      if (!binding)
        param_fail(pline, decl, pname,
                   "missing attribute: expected [[buffer(n)]], [[threadgroup(n)]] or a position attribute such as "
                   "[[thread_position_in_grid]]");
      info.attribute = binding->text;
      uint32_t aline = binding->line;
      if (binding->name == "buffer" || binding->name == "threadgroup") {
        bool buf = binding->name == "buffer";
        uint64_t idx = 0;
        if (binding->args.size() != 1 || !parse_uint(binding->args[0]->text, idx))
          param_fail(aline, decl, pname, "[[" + binding->text + "]] needs an integer literal index");
        if (idx > 30)
          param_fail(aline, decl, pname,
                     std::string(buf ? "buffer" : "threadgroup") + " index " + std::to_string(idx) + " is out of range (Metal allows 31 " +
                         (buf ? "buffer" : "threadgroup memory") + " bindings, 0-30)");
        auto& used = buf ? buffers : groups;
        auto it = used.find(uint32_t(idx));
        if (it != used.end())
          param_fail(aline, decl, pname,
                     "duplicate " + std::string(buf ? "buffer" : "threadgroup") + " index " + std::to_string(idx) +
                         " (already used by parameter '" + it->second->name + "' at line " + std::to_string(it->second->line) + ")");
        info.index = uint32_t(idx);
        if (buf) {
          info.kind = ParamInfo::Kind::Buffer;
          if (space_word != "device" && space_word != "constant")
            param_fail(pline, decl, pname, "a [[buffer(n)]] parameter must be in the device or constant address space");
        } else {
          info.kind = ParamInfo::Kind::Threadgroup;
          if (space_word != "threadgroup" || (ptr == 0 && ref == 0))
            param_fail(pline, decl, pname, "a [[threadgroup(n)]] parameter must be a threadgroup pointer or reference");
        }
        if (px.is_void && !info.is_pointer) param_fail(pline, decl, pname, "a void parameter must be a pointer");
      } else {
        info.kind = ParamInfo::Kind::Position;
        info.index = 0;
        px.field = position_fields().at(binding->name);
        if (ptr || ref || (!space_word.empty() && space_word != "thread"))
          param_fail(pline, decl, pname, "[[" + binding->name + "]] needs a value parameter (uint, uint2, uint3, ushort...)");
        info.is_pointer = false;
        info.space = ParamInfo::Space::Thread;
      }
      decl.params.push_back(info);
      extra.params.push_back(px);
      ParamInfo* stored = &decl.params.back();
      if (stored->kind == ParamInfo::Kind::Buffer) buffers[stored->index] = stored;
      if (stored->kind == ParamInfo::Kind::Threadgroup) groups[stored->index] = stored;
    }
  }

  // Kernel-scope `threadgroup T a[N], b;` → runtime-shared storage, one line, same line count.
  void threadgroup_decls(const KernelDecl& decl, size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      if (!is(toks_[i], "threadgroup")) continue;
      const Token& prev = toks_[i - 1];
      if (!(is(prev, ";") || is(prev, "{") || is(prev, "}"))) continue;
      size_t semi = i + 1;
      int depth = 0, ang = 0;
      bool skip = false, init = false;
      std::vector<std::pair<size_t, size_t>> decls;  // declarator ranges
      size_t start = i + 1;
      for (; semi < e; ++semi) {
        const Token& t = toks_[semi];
        if (is(t, "(") || is(t, "[") || is(t, "{")) {
          if (depth == 0 && (is(t, "(") || is(t, "{"))) (is(t, "{") ? init : skip) = true;
          ++depth;
        } else if (is(t, ")") || is(t, "]") || is(t, "}")) --depth;
        else if (depth == 0 && is(t, "<")) ++ang;
        else if (depth == 0 && is(t, ">") && ang > 0) --ang;
        else if (depth == 0 && ang == 0 && (is(t, "*") || is(t, "&"))) skip = true;
        else if (depth == 0 && ang == 0 && is(t, "=")) init = true;
        else if (depth == 0 && ang == 0 && is(t, ",")) { decls.push_back({start, semi}); start = semi + 1; }
        else if (depth == 0 && is(t, ";")) break;
      }
      if (semi >= e) break;
      decls.push_back({start, semi});
      if (skip) { i = semi; continue; }  // pointers/references into threadgroup memory stay as written
      // Type: tokens of the first declarator before its name.
      auto name_of = [&](std::pair<size_t, size_t> r) {
        size_t k = r.first;
        size_t name = r.second;
        for (; k < r.second && !is(toks_[k], "[") && !is(toks_[k], "=") && !is(toks_[k], "{"); ++k) name = k;
        return name;
      };
      size_t first_name = name_of(decls[0]);
      if (first_name >= decls[0].second || first_name == decls[0].first || toks_[first_name].kind != Tok::Ident) {
        i = semi;
        continue;  // not a declaration we understand; leave it to the compiler
      }
      std::string var(toks_[first_name].text);
      if (init)
        fail(file_, toks_[i].line, "kernel '" + decl.name + "': threadgroup variable '" + var + "' cannot have an initializer");
      std::string type = join(toks_, decls[0].first, first_name);
      std::string text;
      for (auto r : decls) {
        size_t nm = r == decls[0] ? first_name : name_of(r);
        if (nm >= r.second || toks_[nm].kind != Tok::Ident) fail(file_, toks_[r.first].line, "cannot parse threadgroup declaration");
        std::string dims = join(toks_, nm + 1, r.second);
        if (!text.empty()) text += ' ';
        text += "auto& " + std::string(toks_[nm].text) + " = ::tmps_sim::threadgroup_static<" + type + dims + ">(" +
                std::to_string(next_tg_id_++) + "u, __LINE__);";
      }
      size_t lines = std::count(src_.begin() + toks_[i].begin, src_.begin() + toks_[semi].end, '\n');
      text.append(lines, '\n');
      edits_.push_back(Edit{toks_[i].begin, toks_[semi].end, text});
      i = semi;
    }
  }

  // N of a `// tmps-sim: effect_threads=N` comment alone on the line before `line`, else 0.
  uint32_t effect_threads_hint(uint32_t line) const {
    if (line < 2) return 0;
    size_t pos = 0;
    for (uint32_t l = 1; l < line - 1 && pos != std::string::npos; ++l) {
      pos = src_.find('\n', pos);
      if (pos != std::string::npos) ++pos;
    }
    if (pos == std::string::npos) return 0;
    const size_t end = std::min(src_.find('\n', pos), src_.size());
    std::string_view text(src_.data() + pos, end - pos);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    constexpr std::string_view prefix = msl_annotations::kEffectThreads;
    if (text.substr(0, prefix.size()) != prefix) return 0;
    text.remove_prefix(prefix.size());
    uint64_t v = 0;
    size_t digits = 0;
    while (digits < text.size() && digits < 10 && text[digits] >= '0' && text[digits] <= '9') v = v * 10 + uint64_t(text[digits++] - '0');
    if (digits == 0 || v == 0 || v > 0xFFFFFFFFu) return 0;
    return uint32_t(v);
  }

  static bool fiber_word(std::string_view w) {
    auto starts = [&](const char* p) { return w.rfind(p, 0) == 0; };
    return w == "threadgroup_barrier" || w == "simdgroup_barrier" || starts("simd_") || starts("quad_") || starts("simdgroup_");
  }

  bool scan_needs_fibers() const {
    for (size_t i = 0; i < toks_.size(); ++i)
      if (!in_attr_[i] && toks_[i].kind == Tok::Ident && fiber_word(toks_[i].text)) return true;
    for (const Token& p : preproc_) {  // macros may hide the call
      Lexer lex(src_, file_, p.begin + 1, p.end, p.line);
      for (const Token& t : lex.run(false))
        if (t.kind == Tok::Ident && fiber_word(t.text)) return true;
    }
    return false;
  }

  // MSL half literals (1.0h, 2h) are not C++: make them casts.
  void half_literals() {
    auto fix = [&](const Token& t) {
      if (t.kind != Tok::Number || t.text.size() < 2) return;
      char last = t.text.back();
      if (last != 'h' && last != 'H') return;
      if (t.text[0] == '0' && (t.text[1] == 'x' || t.text[1] == 'X')) return;
      edits_.push_back(Edit{t.begin, t.end, "((half)" + std::string(t.text.substr(0, t.text.size() - 1)) + ")"});
    };
    for (const Token& t : toks_) fix(t);
    for (const Token& p : preproc_) {
      Lexer lex(src_, file_, p.begin + 1, p.end, p.line);
      for (const Token& t : lex.run(false)) fix(t);
    }
  }

  // `(bfloat)(x)` and `(bfloat)name` as `::tmps_sim::to_bfloat(...)` (tmps_metal_base.h): clang lowers a float ->
  // bfloat conversion to an out-of-line compiler-rt call on targets without BF16 instructions;
  // the shim's inline function rounds the same way (the same code serves that call). Only a
  // cast of one name or one parenthesized expression that is the whole operand; anything else
  // keeps the compiler's conversion.
  void bfloat_casts() {
    for (size_t i = 0; i + 3 < toks_.size(); ++i) {
      if (!is(toks_[i], "(") || !is(toks_[i + 1], "bfloat") || !is(toks_[i + 2], ")")) continue;
      if (in_attr_[i]) continue;
      if (i > 0) {  // after a name, `)` or `]` the parentheses are a call's, not a cast
        const Token& before = toks_[i - 1];
        if (before.kind == Tok::Ident || before.kind == Tok::Number || is(before, ")") || is(before, "]")) continue;
      }
      auto postfix = [&](const Token& next) {
        return next.kind == Tok::Ident || next.kind == Tok::Number || next.kind == Tok::String || next.kind == Tok::Char ||
               is(next, "(") || is(next, "[") || is(next, ".") || is(next, "->") || is(next, "++") || is(next, "--") ||
               is(next, "{") || is(next, "::") || is(next, "<");
      };
      if (toks_[i + 3].kind == Tok::Ident && i + 4 < toks_.size() && !postfix(toks_[i + 4])) {  // `(bfloat)name`
        edits_.push_back(Edit{toks_[i].begin, toks_[i + 3].end, "::tmps_sim::to_bfloat(" + std::string(toks_[i + 3].text) + ")"});
        continue;
      }
      if (!is(toks_[i + 3], "(")) continue;
      const size_t close = match_close(toks_, i + 3, toks_.size());
      if (close + 1 >= toks_.size()) continue;
      // The parentheses must hold the whole operand: not a cast themselves (`(bfloat)(uchar)x`)
      // nor the start of a postfix expression (`(bfloat)(p)[i]`, `(v).x`, `(f)(y)`).
      if (postfix(toks_[close + 1])) continue;
      if (split_commas(toks_, i + 3, close, false).size() <= 1)  // not a comma expression
        edits_.push_back(Edit{toks_[i].begin, toks_[i + 2].end, "::tmps_sim::to_bfloat"});
    }
  }

  const std::string& src_;
  const std::string& file_;
  std::vector<Token> toks_;
  std::vector<Token> preproc_;
  std::set<std::string> qualifier_macros_;  // object-like macros whose every body is empty or coherent(...)

  // `#define TMPS_COHERENT coherent(device)` under `#if __METAL_VERSION__ >= 320`, empty in the
  // `#else`: conditionals are not evaluated here, so a name counts as a qualifier when every one
  // of its definitions is. Parameters may then spell the qualifier through the macro.
  void qualifier_macros() {
    std::map<std::string, bool> all;
    for (const Token& p : preproc_) {
      std::string_view d = p.text.substr(1);
      size_t k = d.find_first_not_of(" \t");
      if (k == std::string_view::npos || d.substr(k, 6) != "define") continue;
      k = d.find_first_not_of(" \t", k + 6);
      if (k == std::string_view::npos || !is_ident_start(d[k])) continue;
      size_t e = k;
      while (e < d.size() && is_ident_char(d[e])) ++e;
      if (e < d.size() && d[e] == '(') continue;  // function-like
      std::string name(d.substr(k, e - k)), body;
      for (char c : d.substr(e))
        if (c != ' ' && c != '\t' && c != '\r') body += c;
      bool qual = body.empty() || body == "coherent(device)";
      auto it = all.emplace(name, qual).first;
      it->second = it->second && qual;
    }
    for (const auto& [name, qual] : all)
      if (qual) qualifier_macros_.insert(name);
  }
  std::vector<bool> in_attr_;
  uint32_t next_tg_id_ = 0;
};

}  // namespace

// ------------------------------------------------------------------------------------------
// Metal rules a C++ compiler does not enforce

namespace {

// A function body opens with `{` after the `)` of its parameter list (possibly followed by
// `const`, `noexcept`, `override`, attributes or a trailing return type up to the brace).
// Returns the function's name (the identifier before the matching `(`), or "" if `toks[brace]`
// does not open a function body.
std::string function_opened_by(const std::vector<Token>& toks, size_t brace) {
  size_t i = brace;
  while (i > 0) {
    const Token& t = toks[i - 1];
    if (is(t, ")")) break;
    if (is(t, "const") || is(t, "noexcept") || is(t, "override") || is(t, "]")) {
      --i;
      continue;
    }
    return "";
  }
  if (i == 0) return "";
  // Back to the matching `(`.
  int depth = 0;
  size_t j = i - 1;
  for (;; --j) {
    if (is(toks[j], ")")) ++depth;
    else if (is(toks[j], "(") && --depth == 0) break;
    if (j == 0) return "";
  }
  if (j == 0 || toks[j - 1].kind != Tok::Ident) return "";
  const std::string_view name = toks[j - 1].text;
  if (name == "if" || name == "for" || name == "while" || name == "switch" || name == "catch") return "";
  return std::string(name);
}

}  // namespace

void check_metal_rules(const std::string& msl, const std::string& filename) {
  const std::vector<Token> toks = Lexer(msl, filename, 0, msl.size(), 1).run(true);
  // Function definitions and, per function, the identifiers it calls.
  struct Fn {
    uint32_t line = 0;
    std::vector<std::pair<std::string, uint32_t>> calls;  // callee, line
  };
  std::map<std::string, Fn> fns;
  std::string current;  // the function whose body we are in ("" outside)
  int depth = 0, body_depth = -1;
  for (size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (is(t, "{")) {
      if (body_depth < 0) {
        std::string name = function_opened_by(toks, i);
        if (!name.empty()) {
          current = name;
          body_depth = depth;
          fns[current].line = t.line;
        }
      }
      ++depth;
    } else if (is(t, "}")) {
      --depth;
      if (depth == body_depth) {
        body_depth = -1;
        current.clear();
      }
    } else if (body_depth >= 0 && t.kind == Tok::Ident) {
      if (t.text == "static")
        fail(filename, t.line, "static local variables are not supported in Metal (in function '" + current + "')");
      if (i + 1 < toks.size() && is(toks[i + 1], "(") && !(i > 0 && (is(toks[i - 1], ".") || is(toks[i - 1], "->"))))
        fns[current].calls.emplace_back(std::string(t.text), t.line);
    }
  }
  // Recursion: a cycle among the functions defined here (calls by name; Metal has no recursion,
  // direct or mutual).
  std::map<std::string, int> state;  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    for (const auto& [callee, line] : fns[f].calls) {
      if (!fns.count(callee)) continue;
      if (state[callee] == 1) {
        std::string cycle;
        bool on = false;
        for (const auto& p : path) {
          on = on || p == callee;
          if (on) cycle += "'" + p + "' -> ";
        }
        fail(filename, line, "recursive function calls are not supported in Metal: " + cycle + "'" + callee + "'");
      }
      if (state[callee] == 0) visit(callee);
    }
    path.pop_back();
    state[f] = 2;
  };
  std::vector<std::string> names;
  for (const auto& kv : fns) names.push_back(kv.first);
  for (const auto& f : names)
    if (state[f] == 0) visit(f);
}

std::vector<KernelDecl> parse_kernels(const std::string& msl, const std::string& filename) {
  Scanner s(msl, filename);
  s.scan();
  return s.kernels_;
}

MslScan scan_msl(const std::string& msl, const std::string& filename) {
  Scanner s(msl, filename);
  s.scan();
  return MslScan{std::move(s.kernels_), std::move(s.extras_), std::move(s.edits_)};
}

}  // namespace tmps
