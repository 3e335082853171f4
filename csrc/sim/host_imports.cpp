// Reads an ELF64 shared object's dynamic symbol table (see host_imports.h).
#include "host_imports.h"

#include <cstdint>
#include <set>

#include "elf_file.h"
#include "errors.h"

namespace tmps::sim {
namespace {

// An ELF64 little-endian dynamic symbol (the fields we read).
struct Sym {
  uint32_t name;
  unsigned char info, other;
  uint16_t shndx;
  uint64_t value, size;
};

}  // namespace

std::vector<std::string> undefined_symbols(const std::string& path) {
  ElfFile f;
  if (!read_elf(path, f)) throw CompileError("simulator: cannot read the built kernel library " + path);
  std::vector<std::string> out;
  for (const ElfSection& sh : f.sections) {
    if (sh.type != kElfDynsym) continue;
    if (sh.link >= f.sections.size()) break;
    const ElfSection& strtab = f.sections[sh.link];
    const uint64_t n = sh.entsize ? sh.size / sh.entsize : 0;
    for (uint64_t k = 1; k < n; ++k) {
      Sym s{};
      if (!read_at(f.bytes, sh.offset + k * sh.entsize, s) || s.shndx != 0 || s.name == 0) continue;
      const uint64_t at = strtab.offset + s.name;
      if (at >= f.bytes.size()) continue;
      out.emplace_back(f.bytes.c_str() + at);  // NUL-terminated within the string table
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
