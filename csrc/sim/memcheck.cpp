// Memcheck's address map and its reports (see memcheck.h).
#include "memcheck.h"

#include <dlfcn.h>
#ifndef __APPLE__
#include <link.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "line_tables.h"
#include "scheduler.h"
#include "sim_compiler.h"

namespace tmps::sim {
namespace {

// The loaded image (all PT_LOAD segments) of the shared object containing `code`.
bool library_image(const void* code, uintptr_t& lo, uintptr_t& hi) {
#ifdef __APPLE__
  (void)code;
  return false;
#else
  Dl_info info{};
  if (!dladdr(code, &info) || !info.dli_fbase) return false;
  struct Query {
    uintptr_t base, lo, hi;
    bool found;
  } q{reinterpret_cast<uintptr_t>(info.dli_fbase), UINTPTR_MAX, 0, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* p, size_t, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        if (p->dlpi_addr != q->base) return 0;
        for (int i = 0; i < p->dlpi_phnum; ++i) {
          const auto& ph = p->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t lo = p->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          if (lo < q->lo) q->lo = lo;
          if (hi > q->hi) q->hi = hi;
          q->found = true;
        }
        return 1;
      },
      &q);
  if (!q.found) return false;
  lo = q.lo;
  hi = q.hi;
  return true;
#endif
}

const tmps_sim_param* buffer_param(const tmps_sim_kernel* k, uint32_t index) {
  if (!k) return nullptr;
  for (uint32_t i = 0; i < k->num_params; ++i)
    if (k->params[i].kind == TMPS_PARAM_BUFFER && k->params[i].index == index) return &k->params[i];
  return nullptr;
}

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void AccessMap::reset(const LaunchSpec& spec) {
  kernel_ = spec.kernel;
  buffers_.clear();
  allowed_.clear();
  for (uint32_t i = 0; i < TMPS_SIM_MAX_BUFFERS; ++i) {
    if (!spec.buffers[i]) continue;
    const auto ptr = reinterpret_cast<uintptr_t>(spec.buffers[i]);
    const auto lo = spec.buffer_starts[i] ? reinterpret_cast<uintptr_t>(spec.buffer_starts[i]) : ptr;
    buffers_.push_back({lo, ptr + spec.buffer_sizes[i], i, ptr});
  }
  allow(&spec, sizeof spec);  // the argument table's arrays live in the spec
  allow(runtime(), sizeof(tmps_sim_runtime));
  uintptr_t lo = 0, hi = 0;
  if (spec.kernel && library_image(reinterpret_cast<const void*>(spec.kernel->entry), lo, hi))
    allowed_.push_back({lo, hi, 0});
}

void AccessMap::allow(const void* p, uint64_t bytes) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  allowed_.push_back({lo, lo + bytes, 0});
}

std::string AccessMap::describe(uintptr_t addr, uint64_t size, bool write, const std::string& meant_for) const {
  std::ostringstream o;
  o << "out-of-bounds " << (write ? "store" : "load") << " of " << size << " byte" << (size == 1 ? "" : "s");
  auto distance = [addr](const Range& b) -> uint64_t {
    return addr < b.lo ? b.lo - addr : addr >= b.hi ? addr - b.hi + 1 : 0;
  };
  auto named = [&](const Range& b) {
    const tmps_sim_param* q = buffer_param(kernel_, b.index);
    return !meant_for.empty() && q && q->name && meant_for == q->name;
  };
  // The buffer the kernel meant (its own word on it), else the nearest (lowest index on a tie).
  const Range* near = nullptr;
  for (const Range& b : buffers_) {
    if (named(b)) {
      near = &b;
      break;
    }
    if (!near || distance(b) < distance(*near)) near = &b;
  }
  if (!near) {
    o << " at address " << hex(addr) << ": the kernel has no buffers bound";
    return o.str();
  }
  const tmps_sim_param* p = buffer_param(kernel_, near->index);
  const uint64_t bytes = near->hi - near->lo;
  const uint64_t best = distance(*near);
  const bool meant = named(*near);
  const bool far = best > 4096 && best > bytes;
  if (!meant && far) {  // far from every buffer: say so rather than guess an owner
    o << " at address " << hex(addr) << ", outside every buffer bound to the kernel (the nearest, buffer("
      << near->index << ")" << (p && p->name ? std::string(" '") + p->name + "'" : std::string()) << ", is "
      << best << " bytes " << (addr < near->lo ? "after" : "before") << " it)";
    return o.str();
  }
  // Offsets count from the kernel's pointer (element 0), as the kernel indexes.
  const int64_t off = static_cast<int64_t>(addr - near->ptr);  // two's complement: negative below
  const bool inside_start = addr >= near->lo && addr < near->hi;
  o << (inside_start ? " straddling the end of " : off < 0 ? " before " : " past the end of ") << "buffer("
    << near->index << ")";
  if (p && p->name) o << " '" << p->name << "'";
  if (meant) o << " (the buffer its pointer derives from)";
  if (p && p->type && p->is_pointer && p->type_size) {
    o << " (" << p->type << "*, " << bytes / p->type_size << " element" << (bytes / p->type_size == 1 ? "" : "s") << " = "
      << bytes << " bytes)";
  } else {
    o << " (" << bytes << " bytes)";
  }
  o << " at byte offset " << off;
  if (p && p->type_size && off % static_cast<int64_t>(p->type_size) == 0)
    o << " (element " << off / static_cast<int64_t>(p->type_size) << ")";
  if (far) o << ", at address " << hex(addr) << ", far outside it";
  return o.str();
}

std::string source_line_of(const void* pc) {
#ifdef __APPLE__
  (void)pc;
  return "";
#else
  Dl_info info{};
  if (!pc || !dladdr(pc, &info) || !info.dli_fname || !info.dli_fbase) return "";
  const uintptr_t offset = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase) - 1;
  std::string with_lines = info.dli_fname;
  if (std::shared_ptr<LineTables> lines = line_tables_of(with_lines)) {  // a -g0 build: its twin has the lines
    std::string why;
    with_lines = lines->twin(why);
    if (with_lines.empty()) return "an unknown MSL line (" + why + ")";
  }
  int status = -1;
  std::string out = run_capture({"addr2line", "-i", "-e", with_lines, hex(offset)}, status);
  if (status != 0) return "";
  // Innermost frame first: the first one in the kernel's own source (not the shim's headers
  // nor the generated entry points) is the user's line.
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    const size_t colon = l.rfind(':');
    if (colon == std::string::npos || l.compare(0, 2, "??") == 0) continue;
    const std::string file = l.substr(0, colon);
    if (file.find("tmps_metal") != std::string::npos || file.find("metal_stdlib") != std::string::npos ||
        file.find("(simulator") != std::string::npos)
      continue;
    std::string line = l.substr(colon + 1);
    const size_t sp = line.find(' ');  // "12 (discriminator 3)"
    if (sp != std::string::npos) line = line.substr(0, sp);
    if (line.empty() || line == "0" || line == "?") continue;
    return "line " + line;
  }
  return "";
#endif
}

SourceOrigins::SourceOrigins(const std::string& msl) {
  std::istringstream in(msl);
  uint32_t n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    const size_t first = l.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (l.compare(first, 5, "// @ ") == 0) {
      marks_.emplace_back(n, l.substr(first + 5));
    } else if (l.compare(first, 11, "// @buffer ") == 0) {
      const std::string name = l.substr(first + 11);
      buffers_.emplace_back(n, name == "-" ? std::string() : name);
    } else if (first == 0 && l[0] != '#' && l[0] != '/' && l[0] != '}') {
      marks_.emplace_back(n, "");  // program scope: a new function starts, earlier marks end
      buffers_.emplace_back(n, "");
    }
  }
}

namespace {
using Marks = std::vector<std::pair<uint32_t, std::string>>;

// The text of the last mark at or before `line` ("" before the first).
std::string mark_at(const Marks& marks, uint32_t line) {
  auto it = std::upper_bound(marks.begin(), marks.end(), line,
                             [](uint32_t l, const std::pair<uint32_t, std::string>& m) { return l < m.first; });
  return it == marks.begin() ? std::string() : std::prev(it)->second;
}

// N of a source_line_of() text "line N", 0 if it is not one.
uint32_t line_number(const std::string& line_text) {
  if (line_text.compare(0, 5, "line ") != 0) return 0;
  return static_cast<uint32_t>(std::strtoul(line_text.c_str() + 5, nullptr, 10));
}
}  // namespace

std::string SourceOrigins::at(uint32_t line) const { return mark_at(marks_, line); }

std::string SourceOrigins::buffer_at(const std::string& line_text, const SourceOrigins* o) {
  const uint32_t n = line_number(line_text);
  return o && n ? mark_at(o->buffers_, n) : std::string();
}

std::string SourceOrigins::annotate(const std::string& line_text, const SourceOrigins* o) {
  const uint32_t n = line_number(line_text);
  const std::string origin = o && n ? o->at(n) : std::string();
  return origin.empty() ? line_text : line_text + " (" + origin + ")";
}

}  // namespace tmps::sim
