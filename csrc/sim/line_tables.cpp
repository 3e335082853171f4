// Line tables on demand: see line_tables.h.
#include "line_tables.h"

#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#ifndef __APPLE__
#include <elf.h>
#endif

#include "object_cache.h"

namespace tmps::sim {

LineTables::LineTables(std::string library, std::string twin, Build build)
    : library_(std::move(library)), twin_(std::move(twin)), build_(std::move(build)) {}

std::string LineTables::twin(std::string& why) {
  std::string path;
  std::string reason;
  // A thread of its own: the build spawns compilers and waits on futures, more stack than a
  // kernel fiber may have left.
  std::thread t([&] {
    try {
      std::lock_guard<std::mutex> lock(mu_);
      path = twin_locked(reason);
    } catch (const std::exception& e) {
      reason = e.what();
    } catch (...) {
      reason = "unknown error";
    }
  });
  t.join();
  why = reason;
  return path;
}

std::string LineTables::twin_locked(std::string& why) {
  if (!tried_) {
    tried_ = true;
    result_ = build_and_check(why_);
  }
  why = why_;
  return result_;
}

std::string LineTables::build_and_check(std::string& why) {
  std::string unused;
  if (verify_entry(twin_, unused) != EntryState::Valid) {
    try {
      build_(twin_);
      write_meta(twin_, 0);
    } catch (const std::exception& e) {
      why = std::string("its copy with line tables did not build: ") + e.what();
      return "";
    }
  }
  if (!same_loaded_sections(library_, twin_, why)) {
    why = "its copy with line tables has other code (" + why + ")";
    return "";
  }
  return twin_;
}

namespace {
bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return static_cast<bool>(in) || in.eof();
}

#ifndef __APPLE__
// name, address, bytes
using Section = std::tuple<std::string, uint64_t, std::string>;

bool loaded_sections(const std::string& file, std::vector<Section>& out, std::string& why) {
  std::string b;
  if (!read_file(file, b)) return why = "cannot read " + file, false;
  Elf64_Ehdr eh;
  if (b.size() < sizeof eh || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64)
    return why = file + " is not a 64-bit ELF file", false;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > b.size() ||
      eh.e_shstrndx >= eh.e_shnum)
    return why = file + " has no readable section table", false;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), b.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names = sh[eh.e_shstrndx];
  for (const Elf64_Shdr& s : sh) {
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS) continue;
    if (s.sh_offset + s.sh_size > b.size() || s.sh_name >= names.sh_size || names.sh_offset + names.sh_size > b.size())
      return why = file + " has a section outside the file", false;
    const char* name = b.data() + names.sh_offset + s.sh_name;
    out.emplace_back(std::string(name, strnlen(name, names.sh_size - s.sh_name)), s.sh_addr, b.substr(s.sh_offset, s.sh_size));
  }
  return true;
}
#endif
}  // namespace

bool same_loaded_sections(const std::string& a, const std::string& b, std::string& why) {
#ifdef __APPLE__
  (void)a;
  (void)b;
  why = "not an ELF platform";
  return false;
#else
  std::vector<Section> sa, sb;
  if (!loaded_sections(a, sa, why) || !loaded_sections(b, sb, why)) return false;
  for (size_t i = 0; i < sa.size() || i < sb.size(); ++i) {
    if (i >= sa.size() || i >= sb.size()) return why = "a different number of loaded sections", false;
    if (std::get<0>(sa[i]) != std::get<0>(sb[i]) || std::get<1>(sa[i]) != std::get<1>(sb[i]))
      return why = "section " + std::get<0>(sa[i]) + " differs in name or address", false;
    if (std::get<2>(sa[i]) != std::get<2>(sb[i])) return why = "section " + std::get<0>(sa[i]) + " differs", false;
  }
  if (sa.empty()) return why = "no loaded sections", false;
  return true;
#endif
}

}  // namespace tmps::sim
