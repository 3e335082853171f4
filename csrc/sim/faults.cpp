// Faults raised by kernel code as dispatch errors: see faults.h.
//
// on_fault leaves the signal handler (on the worker's alternate stack) for the worker's own
// stack with siglongjmp. _FORTIFY_SOURCE's longjmp check rejects jumps between stacks, which
// we do on purpose.
#undef _FORTIFY_SOURCE

#include "faults.h"

#include <cstdio>

namespace tmps::sim {

namespace {
thread_local FaultTrap* tls_trap = nullptr;
}  // namespace

ThreadFaultTrap::ThreadFaultTrap(FaultTrap& trap) : prev_(tls_trap) { tls_trap = &trap; }
ThreadFaultTrap::~ThreadFaultTrap() { tls_trap = prev_; }

// SIGSEGV/SIGBUS/SIGFPE while a dispatch runs (signals.h): from kernel code, leave it for the
// worker's sigsetjmp; otherwise return so the previous handler runs.
void on_fault(int sig, void* addr) {
  FaultTrap* t = tls_trap;
  if (t && t->in_kernel) {
    t->in_kernel = 0;
    t->sig = sig;
    t->addr = addr;
    siglongjmp(t->jmp, 2);
  }
}

std::string fault_message(const FaultTrap& trap, const std::string& where,
                          const std::vector<std::unique_ptr<FiberStack>>* fiber_stacks, size_t stack_bytes) {
  const void* addr = trap.addr;
  char hex[32];
  std::snprintf(hex, sizeof hex, "%p", addr);
  if (trap.sig == SIGFPE) return "arithmetic fault (integer division by zero?) in " + where;
  if (fiber_stacks) {
    for (const auto& s : *fiber_stacks)
      if (s->in_guard(addr))
        return "stack overflow in " + where + ": the simulator's fiber stacks hold " +
               std::to_string(stack_bytes / 1024) + " KiB (set TRITON_MPS_SIM_STACK_KB to raise it)";
  }
  return std::string("invalid memory access at ") + hex + " in " + where +
         " - out-of-bounds device/threadgroup access?";
}

}  // namespace tmps::sim
