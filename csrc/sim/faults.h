// Faults raised by kernel code (SIGSEGV, SIGBUS, SIGFPE) as dispatch errors.
//
// Each scheduler worker owns a FaultTrap: the sigsetjmp target it runs threadgroups under and
// the record the signal handler fills. While the worker's thread runs kernel code
// (`in_kernel`), a fault on that thread is recorded and the handler siglongjmps to the trap
// (value 2); the worker then reports fault_message(). Faults anywhere else are not ours: the
// handler returns and the previous one runs (signals.h). The scheduler also leaves kernel code
// through the same jump buffer when a kernel fails or a dispatch is cancelled (value 1).
#pragma once

#include <setjmp.h>
#include <signal.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fiber.h"

namespace tmps::sim {

struct FaultTrap {
  sigjmp_buf jmp;
  volatile sig_atomic_t in_kernel = 0;  // set around every call into kernel code
  volatile int sig = 0;                 // the fault's signal; 0: no fault
  void* volatile addr = nullptr;        // the faulting address
};

// Makes `trap` the calling thread's trap (the one on_fault uses) while it lives.
class ThreadFaultTrap {
 public:
  explicit ThreadFaultTrap(FaultTrap& trap);
  ~ThreadFaultTrap();
  ThreadFaultTrap(const ThreadFaultTrap&) = delete;
  ThreadFaultTrap& operator=(const ThreadFaultTrap&) = delete;

 private:
  FaultTrap* prev_;
};

// The FaultHook given to DispatchSignals (signals.h): a fault in kernel code on a thread with a
// trap is recorded there and leaves through siglongjmp; otherwise it returns so the previous
// handler runs.
void on_fault(int sig, void* addr);

// The error message for the fault recorded in `trap`. `where` names the kernel and thread
// ("kernel 'k' (thread ...)"). `fiber_stacks`: the worker's fiber stacks when it ran fibers
// (a fault in a guard page is a stack overflow; each stack holds `stack_bytes`), else null.
std::string fault_message(const FaultTrap& trap, const std::string& where,
                          const std::vector<std::unique_ptr<FiberStack>>* fiber_stacks, size_t stack_bytes);

}  // namespace tmps::sim
