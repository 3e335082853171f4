// The section table of a 64-bit little-endian ELF file (the simulator's kernel libraries on
// Linux), read with plain structs of the format's layout rather than <elf.h>, so it builds on
// macOS too (where kernel libraries are Mach-O and no section is found).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tmps::sim {

struct ElfSection {
  std::string name;  // "" when the section name table cannot be read
  uint32_t type = 0, link = 0;
  uint64_t flags = 0, addr = 0, offset = 0, size = 0, entsize = 0;
};

constexpr uint32_t kElfNobits = 8, kElfDynsym = 11;  // section types
constexpr uint64_t kElfAlloc = 2;                    // section flag: loaded with the file

struct ElfFile {
  std::string bytes;  // the whole file
  bool elf = false;   // a 64-bit little-endian ELF file
  // The section headers in table order (their indices are the file's), up to the first one
  // that lies outside the file.
  std::vector<ElfSection> sections;
};

// The file at `path`; false if it cannot be read (a file that is not ELF is read, `elf` false).
bool read_elf(const std::string& path, ElfFile& out);

// A T (a plain struct of the format) at byte `at` of `bytes`; false if it lies outside them.
template <class T>
bool read_at(const std::string& bytes, uint64_t at, T& out) {
  if (at > bytes.size() || sizeof(T) > bytes.size() - at) return false;
  std::memcpy(&out, bytes.data() + at, sizeof(T));
  return true;
}

}  // namespace tmps::sim
