// The section table of an ELF file: see elf_file.h.
#include "elf_file.h"

#include <fstream>
#include <iterator>

namespace tmps::sim {
namespace {

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

}  // namespace

bool read_elf(const std::string& path, ElfFile& out) {
  out = ElfFile{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return false;
  Ehdr eh{};
  if (!read_at(out.bytes, 0, eh) || std::memcmp(eh.ident, "\x7f" "ELF", 4) != 0 || eh.ident[4] != 2 || eh.ident[5] != 1)
    return true;
  out.elf = true;
  std::vector<uint32_t> names;
  for (uint16_t i = 0; i < eh.shnum; ++i) {
    Shdr sh{};
    if (!read_at(out.bytes, eh.shoff + uint64_t(i) * eh.shentsize, sh)) break;
    ElfSection s;
    s.type = sh.type;
    s.link = sh.link;
    s.flags = sh.flags;
    s.addr = sh.addr;
    s.offset = sh.offset;
    s.size = sh.size;
    s.entsize = sh.entsize;
    out.sections.push_back(s);
    names.push_back(sh.name);
  }
  if (eh.shstrndx >= out.sections.size()) return true;
  const ElfSection& table = out.sections[eh.shstrndx];
  if (table.offset > out.bytes.size() || table.size > out.bytes.size() - table.offset) return true;
  for (size_t i = 0; i < out.sections.size(); ++i) {
    if (names[i] >= table.size) continue;
    const char* name = out.bytes.data() + table.offset + names[i];
    out.sections[i].name.assign(name, strnlen(name, table.size - names[i]));
  }
  return true;
}

}  // namespace tmps::sim
