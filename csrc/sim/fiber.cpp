#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "errors.h"

#if defined(__SANITIZE_ADDRESS__)
#define TMPS_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TMPS_FIBER_ASAN 1
#endif
#endif
#ifdef TMPS_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#endif

extern "C" void tmps_sim_fiber_start();  // fiber_*.S: calls fn(arg) from the initial frame

namespace tmps::sim {

namespace {
size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

FiberStack::FiberStack(size_t usable_bytes, size_t block) {
  guard_ = page_size();
  usable_ = block ? block - guard_ : round_up(usable_bytes < 16384 ? 16384 : usable_bytes, guard_);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;  // most of a fiber stack is never touched
#endif
  const size_t total = guard_ + usable_;
  const size_t span = block ? 2 * block : total;  // room to trim to a `block`-aligned start
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) throw OutOfMemory("simulator: cannot map a fiber stack of " + std::to_string(usable_) + " bytes");
  if (block) {
    const auto at = reinterpret_cast<uintptr_t>(p), start = (at + block - 1) / block * block;
    if (start > at) munmap(p, start - at);
    if (start + total < at + span) munmap(reinterpret_cast<void*>(start + total), at + span - start - total);
    p = reinterpret_cast<void*>(start);
  }
  if (mprotect(p, guard_, PROT_NONE) != 0) {
    munmap(p, total);
    throw OutOfMemory("simulator: cannot protect a fiber stack guard page");
  }
  base_ = p;
}

FiberStack::~FiberStack() {
  if (base_) munmap(base_, guard_ + usable_);
}

bool FiberStack::in_guard(const void* addr) const {
  auto a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(base_);
  return a >= b && a < b + guard_;
}

bool FiberStack::contains(const void* addr) const {
  auto a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(base_);
  return a >= b && a < b + guard_ + usable_;
}

// The initial frame mirrors what tmps_sim_fiber_switch pops; fn/arg travel in callee-saved
// registers and the "return address" is tmps_sim_fiber_start, which moves them into place.
void* fiber_prepare(const FiberStack& stack, void (*fn)(void*), void* arg, size_t skew) {
  if (skew > stack.size() / 2) skew = 0;
#ifdef TMPS_FIBER_ASAN
  // A fiber ends by switching away for good, so the ASan-instrumented frames it leaves behind
  // (fiber_main's) never unpoison their redzones: clear that stale poison before the stack is
  // reused, or the next fiber's locals read as a stack-buffer-overflow (scripts/sanitize.sh).
  ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(stack.top()) - stack.size(), stack.size());
#endif
  auto top = (reinterpret_cast<uintptr_t>(stack.top()) - skew) & ~uintptr_t(15);
#if defined(__x86_64__)
  // [0] unused (a fiber runs with its worker's MXCSR and x87 control word: fiber_x86_64.S),
  // [8] r15, [16] r14, [24] r13=arg, [32] r12=fn, [40] rbx, [48] rbp, [56] return address.
  // After the pops and ret, rsp = top - 16: aligned for the call.
  auto* f = reinterpret_cast<uint64_t*>(top - 80);
  std::memset(f, 0, 80);
  f[3] = reinterpret_cast<uint64_t>(arg);
  f[4] = reinterpret_cast<uint64_t>(fn);
  f[7] = reinterpret_cast<uint64_t>(&tmps_sim_fiber_start);
  return f;
#elif defined(__aarch64__)
  // [0] x19=fn, [8] x20=arg, ... [80] x29, [88] x30=return address, [96..159] d8-d15,
  // [160] fpcr. 176 bytes, a multiple of 16.
  auto* f = reinterpret_cast<uint64_t*>(top - 176);
  uint64_t fpcr = 0;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  std::memset(f, 0, 176);
  f[0] = reinterpret_cast<uint64_t>(fn);
  f[1] = reinterpret_cast<uint64_t>(arg);
  f[11] = reinterpret_cast<uint64_t>(&tmps_sim_fiber_start);
  f[20] = fpcr;
  return f;
#else
#error "triton-mps simulator: no fiber switch for this architecture"
#endif
}

size_t default_fiber_stack_bytes() {
  if (const char* s = std::getenv("TRITON_MPS_SIM_STACK_KB"); s && *s) {
    char* end = nullptr;
    unsigned long kb = std::strtoul(s, &end, 10);
    if (end == s || *end != '\0' || kb == 0 || kb > (1ul << 20))
      throw InvalidArgument(std::string("TRITON_MPS_SIM_STACK_KB must be a fiber stack size in KiB (1 to 1048576), got '") +
                            s + "'");
    return static_cast<size_t>(kb) * 1024;
  }
  return 256 * 1024;
}

}  // namespace tmps::sim
