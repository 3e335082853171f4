// Memcheck: which memory a simulated GPU thread may touch, and the report when it touches
// other memory.
//
// Kernels built with memcheck call the runtime's check_access() before every load and store
// through a pointer (see include/tmps_metal_memcheck.h). An access is allowed when it lies
// wholly inside one bound buffer, the threadgroup's memory in use, the thread's own stack,
// the kernel library's image, or a runtime structure the shim reads (thread positions,
// SIMD-group snapshots, the argument table). Anything else is reported before it happens,
// naming the nearest buffer and the offset from it. Caller memory beside a buffer (the
// neighbour of a torch tensor) is never touched. Limitation: an access that strays from one
// bound buffer exactly into another is not detected (addresses carry no provenance here), nor
// an aligned 4-byte access to the word holding the first or last element of a buffer that
// is not word-aligned at that end (the word that narrow atomics must use). Threadgroup memory
// is checked exactly only by the race check: otherwise the fast path allows the workers' whole
// arenas (consecutive), so an overrun of the part in use is not reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "include/tmps_sim_abi.h"

namespace tmps::sim {

struct LaunchSpec;

class AccessMap {
 public:
  // The buffers of `spec`, the runtime structures it points to, and the kernel's library.
  void reset(const LaunchSpec& spec);
  // Also allow [p, p + bytes) (worker-owned structures).
  void allow(const void* p, uint64_t bytes);

  bool in_buffer(uintptr_t addr, uint64_t size) const {
    for (const Range& b : buffers_)
      if (addr >= b.lo && addr < b.hi && size <= b.hi - addr) return true;
    // An aligned 32-bit word holding the first or last 16- or 8-bit element of a buffer that
    // starts or ends off a word boundary: Metal has no atomics narrower than 32 bits, so
    // fp16/bf16/int8 atomics compare-and-swap the containing word and write its other bytes
    // back unchanged.
    if (size == 4 && addr % 4 == 0)
      for (const Range& b : buffers_)
        if (addr < b.hi && addr + 4 > b.lo) return true;
    return false;
  }
  // The bound buffer holding [addr, addr + size): its position among the bound buffers
  // (0..count-1) and base; false if none.
  bool locate(uintptr_t addr, uint64_t size, uint32_t& position, uintptr_t& base) const {
    for (uint32_t i = 0; i < buffers_.size(); ++i) {
      const Range& b = buffers_[i];
      if (addr >= b.lo && addr < b.hi && size <= b.hi - addr) {
        position = i;
        base = b.lo;
        return true;
      }
    }
    return false;
  }
  size_t buffer_count() const { return buffers_.size(); }
  uint64_t buffer_bytes(uint32_t position) const { return buffers_[position].hi - buffers_[position].lo; }
  uint32_t buffer_index(uint32_t position) const { return buffers_[position].index; }
  bool in_allowed(uintptr_t addr, uint64_t size) const {
    for (const Range& r : allowed_)
      if (addr >= r.lo && addr < r.hi && size <= r.hi - addr) return true;
    return false;
  }

  // "out-of-bounds store of 4 bytes to buffer(2) 'out' (float*, 16 elements = 64 bytes) at
  // byte offset 64 (element 16)": against `meant_for`, the parameter the access's pointer
  // derives from (SourceOrigins::buffer_at), when it names a bound buffer; else against the
  // nearest buffer, or none for a far address.
  std::string describe(uintptr_t addr, uint64_t size, bool write, const std::string& meant_for = "") const;

 private:
  struct Range {
    uintptr_t lo = 0, hi = 0;
    uint32_t index = 0;  // buffers: [[buffer(index)]]
    uintptr_t ptr = 0;   // buffers: the kernel's pointer (lo <= ptr <= hi); offsets count from it
  };
  const tmps_sim_kernel* kernel_ = nullptr;
  std::vector<Range> buffers_;
  std::vector<Range> allowed_;
};

// "line 12" of the MSL (or Triton-generated MSL) for a code address in a kernel library, from
// its line tables (addr2line; a memcheck build's are in its twin, built on first need:
// line_tables.h); "" if unknown, "an unknown MSL line (why)" if the twin cannot say. Only
// on the error path: spawns processes.
std::string source_line_of(const void* pc);

// The Triton source lines behind an MSL text: our compiler writes `// @ kernel.py:12` before
// the code of each Triton line, so a diagnostic can name the user's line as well.
class SourceOrigins {
 public:
  explicit SourceOrigins(const std::string& msl);
  // "kernel.py:12" for the code at MSL line `line`; "" if none is recorded (hand-written MSL).
  std::string at(uint32_t line) const;
  // "line 46" -> "line 46 (kernel.py:12)"; unchanged without an origin. Null `o`: unchanged.
  static std::string annotate(const std::string& line_text, const SourceOrigins* o);
  // The kernel parameter ("arg1") the memory accesses at MSL line `line` go through: our
  // compiler writes `// @buffer arg1` before a load's or store's accesses and `// @buffer -`
  // after (compiler/provenance.py); "" if unknown. Null `o` or a line text that is not
  // "line N": "".
  static std::string buffer_at(const std::string& line_text, const SourceOrigins* o);

 private:
  std::vector<std::pair<uint32_t, std::string>> marks_;    // ascending lines; "": a function boundary
  std::vector<std::pair<uint32_t, std::string>> buffers_;  // ascending lines; "": none from here on
};

}  // namespace tmps::sim
