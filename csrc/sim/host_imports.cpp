// Reads an ELF64 shared object's dynamic symbol table (see host_imports.h).
#include "host_imports.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "errors.h"

namespace tmps::sim {
namespace {

template <class T>
bool read_at(const std::string& f, uint64_t off, T& out) {
  if (off > f.size() || sizeof(T) > f.size() - off) return false;
  std::memcpy(&out, f.data() + off, sizeof(T));
  return true;
}

// ELF64 little-endian layouts (the fields we read).
struct Ehdr {
  unsigned char ident[16];
  uint16_t type, machine;
  uint32_t version;
  uint64_t entry, phoff, shoff;
  uint32_t flags;
  uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct Shdr {
  uint32_t name, type;
  uint64_t flags, addr, offset, size;
  uint32_t link, info;
  uint64_t addralign, entsize;
};
struct Sym {
  uint32_t name;
  unsigned char info, other;
  uint16_t shndx;
  uint64_t value, size;
};
constexpr uint32_t kShtDynsym = 11;

}  // namespace

std::vector<std::string> undefined_symbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError("simulator: cannot read the built kernel library " + path);
  const std::string f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Ehdr eh{};
  if (!read_at(f, 0, eh) || std::memcmp(eh.ident, "\x7f" "ELF", 4) != 0 || eh.ident[4] != 2 || eh.ident[5] != 1)
    return {};
  std::vector<std::string> out;
  for (uint16_t i = 0; i < eh.shnum; ++i) {
    Shdr sh{};
    if (!read_at(f, eh.shoff + uint64_t(i) * eh.shentsize, sh) || sh.type != kShtDynsym) continue;
    Shdr strtab{};
    if (!read_at(f, eh.shoff + uint64_t(sh.link) * eh.shentsize, strtab)) break;
    const uint64_t n = sh.entsize ? sh.size / sh.entsize : 0;
    for (uint64_t k = 1; k < n; ++k) {
      Sym s{};
      if (!read_at(f, sh.offset + k * sh.entsize, s) || s.shndx != 0 || s.name == 0) continue;
      const uint64_t at = strtab.offset + s.name;
      if (at >= f.size()) continue;
      out.emplace_back(f.c_str() + at);  // NUL-terminated within the string table
    }
  }
  return out;
}

bool allowed_host_import(const std::string& name) {
  static const std::set<std::string> allowed = [] {
    std::set<std::string> s = {"memset", "memcpy", "memmove", "memcmp"};
    for (const char* f :
         {"acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
          "exp", "exp2", "exp10", "expm1", "frexp", "ldexp", "log", "log10", "log1p", "log2", "logb", "modf", "scalbn",
          "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor",
          "nearbyint", "rint", "lrint", "llrint", "round", "lround", "llround", "roundeven", "trunc", "fmod",
          "remainder", "remquo", "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma", "ilogb",
          "sincos"}) {
      s.insert(f);
      s.insert(std::string(f) + "f");
    }
    return s;
  }();
  return allowed.count(name) != 0;
}

}  // namespace tmps::sim
