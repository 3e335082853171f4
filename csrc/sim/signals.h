// Process signals while simulated dispatches run.
//
// Faults (SIGSEGV, SIGBUS, SIGFPE) raised by kernel code become dispatch errors: the handler
// calls the scheduler's hook, which leaves the kernel through siglongjmp; faults from anywhere
// else go on to the handler installed before ours (Python's faulthandler, the default action).
// SIGINT (Ctrl-C) is counted, then handed on to the previous handler (Python's, which raises
// KeyboardInterrupt once the dispatch returns): running dispatches poll the count and stop.
// Handlers are installed while at least one dispatch runs and the previous ones restored after.
#pragma once

#include <signal.h>

#include <cstddef>
#include <vector>

namespace tmps::sim {

// Called in the signal handler for a fault at `addr`; returns if the fault is not the
// simulator's to handle.
using FaultHook = void (*)(int sig, void* addr);

class DispatchSignals {
 public:
  explicit DispatchSignals(FaultHook hook);
  ~DispatchSignals();
  DispatchSignals(const DispatchSignals&) = delete;
  DispatchSignals& operator=(const DispatchSignals&) = delete;
};

// SIGINTs received while dispatches ran (monotonic; compare with the value at the start).
unsigned interrupt_count();
// The same count as a word kernel code can poll (memcheck's fast path).
const volatile unsigned* interrupt_counter();

// The fault handler runs on this thread's alternate stack while the object lives: a fiber
// that overflowed has no stack left. `mem` is kept by the caller and reused.
class SignalStack {
 public:
  explicit SignalStack(std::vector<unsigned char>& mem);
  ~SignalStack();
  SignalStack(const SignalStack&) = delete;
  SignalStack& operator=(const SignalStack&) = delete;

 private:
  bool ok_ = false;
  stack_t old_{};
};

}  // namespace tmps::sim
