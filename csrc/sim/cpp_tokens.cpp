// Tokens of C++/MSL source text (cpp_tokens.h).
#include "cpp_tokens.h"

namespace tmps::sim_tokens {

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

std::vector<Tok> tokenize(const std::string& s) {
  static const char* kPuncts[] = {"<<=", ">>=", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
                                  "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="};
  std::vector<Tok> out;
  uint32_t line = 1;
  bool line_start = true;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; line_start = true; continue; }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i; continue; }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') { while (i < s.size() && s[i] != '\n') ++i; continue; }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      e = e == std::string::npos ? s.size() : e + 2;
      for (size_t k = i; k < e; ++k) line += s[k] == '\n';
      i = e;
      continue;
    }
    if (c == '#' && line_start) {  // a preprocessor line (continuations included)
      size_t b = i;
      while (i < s.size() && !(s[i] == '\n' && s[i - 1] != '\\')) { line += (s[i] == '\n'); ++i; }
      out.push_back({T::Directive, s.substr(b, i - b), line, b});
      continue;
    }
    line_start = false;
    size_t b = i;
    if (ident_start(c)) {
      while (i < s.size() && ident_char(s[i])) ++i;
      out.push_back({T::Ident, s.substr(b, i - b), line, b});
    } else if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9')) {
      while (i < s.size() && (ident_char(s[i]) || s[i] == '.' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P'))))
        ++i;
      out.push_back({T::Number, s.substr(b, i - b), line, b});
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c) i += s[i] == '\\' ? 2 : 1;
      ++i;
      out.push_back({T::Literal, s.substr(b, i - b), line, b});
    } else {
      std::string p(1, c);
      for (const char* q : kPuncts)
        if (s.compare(i, std::char_traits<char>::length(q), q) == 0) { p = q; break; }
      i += p.size();
      out.push_back({T::Punct, p, line, b});
    }
  }
  return out;
}

size_t matching(const std::vector<Tok>& t, size_t i) {
  const std::string& open = t[i].text;
  const char* close = open == "(" ? ")" : open == "[" ? "]" : "}";
  int depth = 0;
  for (size_t k = i; k < t.size(); ++k) {
    if (t[k].kind != T::Punct) continue;
    if (t[k].text == open) ++depth;
    else if (t[k].text == close && --depth == 0) return k;
  }
  return std::string::npos;
}

}  // namespace tmps::sim_tokens
