// Tokens of C++/MSL source text, for the simulator's source rewrites (simd_collapse.cpp,
// checked_access.cpp): identifiers, numbers, punctuation (longest match), literals and whole
// preprocessor lines; comments and whitespace dropped. Enough to find statements, brackets and
// declarations; no macro expansion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tmps::sim_tokens {

enum class T { Ident, Number, Punct, Literal, Directive };
struct Tok {
  T kind;
  std::string text;
  uint32_t line;  // 1-based line in the text
  size_t at;      // byte offset of the token's first character
};

std::vector<Tok> tokenize(const std::string& s);

// t[i] is ( [ or {: the index of its partner, or std::string::npos if unbalanced.
size_t matching(const std::vector<Tok>& t, size_t i);

}  // namespace tmps::sim_tokens
