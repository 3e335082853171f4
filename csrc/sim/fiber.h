// Fibers for the simulator: one per GPU thread, switched at barriers and SIMD-group
// collectives. The switch itself is a few instructions of our own assembly (fiber_*.S):
// ucontext costs a syscall per switch (10x slower), and C++20 coroutines would need
// co_await on every function on the way to a barrier.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
// Save the callee-saved registers on the current stack (on aarch64 also FPCR; on x86-64 not
// MXCSR and the x87 control word, which are the worker's for every fiber: fiber_x86_64.S),
// store the stack pointer in *save_sp, load `to_sp` and restore what was saved there.
void tmps_sim_fiber_switch(void** save_sp, void* to_sp);
}

namespace tmps::sim {

// A fiber stack from mmap with a PROT_NONE guard page below it, so overflow faults instead
// of silently corrupting the neighbouring stack. Allocated once per worker and reused.
class FiberStack {
 public:
  // block != 0 (a power of two): the mapping, guard page included, is exactly `block` bytes
  // aligned to `block` (usable_bytes is then ignored), so memcheck's fast path can tell the
  // running fiber's stack from the address of its own frame (tmps_sim_memcheck::stack_mask).
  explicit FiberStack(size_t usable_bytes, size_t block = 0);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  void* top() const { return static_cast<char*>(base_) + guard_ + usable_; }
  size_t size() const { return usable_; }
  // True if `addr` lies in the guard page (a stack overflow).
  bool in_guard(const void* addr) const;
  // True if `addr` lies anywhere in the mapping, guard included.
  bool contains(const void* addr) const;

 private:
  void* base_ = nullptr;  // start of the mapping (the guard page)
  size_t guard_ = 0;
  size_t usable_ = 0;
};

// Lay out an initial frame on `stack` so that the first switch to the returned stack
// pointer calls fn(arg). fn must never return: it ends by switching away for good.
// `skew` bytes are left unused at the top: staggering fibers' stacks keeps their hot frames
// from all mapping to the same cache sets (every stack top has the same page offset).
void* fiber_prepare(const FiberStack& stack, void (*fn)(void*), void* arg, size_t skew = 0);

inline void fiber_switch(void** save_sp, void* to_sp) { tmps_sim_fiber_switch(save_sp, to_sp); }

// Default usable stack size: $TRITON_MPS_SIM_STACK_KB KiB, else 256 KiB.
size_t default_fiber_stack_bytes();

}  // namespace tmps::sim
