// Line tables on demand: see line_tables.h.
#include "line_tables.h"

#include <exception>
#include <filesystem>
#include <thread>
#include <tuple>
#include <vector>

#include "elf_file.h"
#include "object_cache.h"
#include "pipeline_cache.h"

namespace tmps::sim {

LineTables::LineTables(std::string library, std::string twin_name, Build build)
    : library_(std::move(library)), twin_name_(std::move(twin_name)), build_(std::move(build)) {}

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
  std::string twin, unused;
  try {
    twin = (std::filesystem::path(usable_cache_dir("sim")) / twin_name_).string();
    if (verify_entry(twin, unused) != EntryState::Valid) {
      build_(twin);
      write_meta(twin, 0);
    }
  } catch (const std::exception& e) {
    why = std::string("its copy with line tables did not build: ") + e.what();
    return "";
  }
  if (!same_loaded_sections(library_, twin, why)) {
    why = "its copy with line tables has other code (" + why + ")";
    return "";
  }
  return twin;
}

bool same_loaded_sections(const std::string& a, const std::string& b, std::string& why) {
  // name, address, bytes of each allocated section with contents
  using Section = std::tuple<std::string, uint64_t, std::string>;
  const auto loaded = [&why](const std::string& file, std::vector<Section>& out) {
    ElfFile f;
    if (!read_elf(file, f)) return why = "cannot read " + file, false;
    if (!f.elf) return why = file + " is not a 64-bit ELF file", false;
    for (const ElfSection& s : f.sections) {
      if (!(s.flags & kElfAlloc) || s.type == kElfNobits) continue;
      if (s.offset > f.bytes.size() || s.size > f.bytes.size() - s.offset)
        return why = file + " has a section outside the file", false;
      out.emplace_back(s.name, s.addr, f.bytes.substr(s.offset, s.size));
    }
    return true;
  };
  std::vector<Section> sa, sb;
  if (!loaded(a, sa) || !loaded(b, sb)) return false;
  for (size_t i = 0; i < sa.size() || i < sb.size(); ++i) {
    if (i >= sa.size() || i >= sb.size()) return why = "a different number of loaded sections", false;
    if (std::get<0>(sa[i]) != std::get<0>(sb[i]) || std::get<1>(sa[i]) != std::get<1>(sb[i]))
      return why = "section " + std::get<0>(sa[i]) + " differs in name or address", false;
    if (std::get<2>(sa[i]) != std::get<2>(sb[i])) return why = "section " + std::get<0>(sa[i]) + " differs", false;
  }
  if (sa.empty()) return why = "no loaded sections", false;
  return true;
}

}  // namespace tmps::sim
