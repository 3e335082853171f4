// Process signals while simulated dispatches run (see signals.h).
#include "signals.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace tmps::sim {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGINT};
constexpr int kNumSignals = 4;

std::mutex g_mu;
int g_users = 0;
std::atomic<FaultHook> g_hook{nullptr};
std::atomic<unsigned> g_interrupts{0};
struct sigaction g_old[kNumSignals];

int slot(int sig) {
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig) return i;
  return 0;
}

void chain(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& old = g_old[slot(sig)];
  if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
    old.sa_sigaction(sig, info, ctx);
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
    old.sa_handler(sig);
  } else if (old.sa_handler == SIG_DFL) {
    // Faults: returning re-executes the faulting instruction under the default action.
    // SIGINT: the default action (terminate) is what the user asked for.
    signal(sig, SIG_DFL);
    if (sig == SIGINT) raise(SIGINT);
  }
}

void on_signal(int sig, siginfo_t* info, void* ctx) {
  if (sig == SIGINT) {
    g_interrupts.fetch_add(1, std::memory_order_relaxed);
  } else if (FaultHook hook = g_hook.load(std::memory_order_relaxed)) {
    hook(sig, info ? info->si_addr : nullptr);  // does not return for a kernel fault
  }
  chain(sig, info, ctx);
}

}  // namespace

DispatchSignals::DispatchSignals(FaultHook hook) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_hook.store(hook);
  if (g_users++ > 0) return;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &sa, &g_old[i]);
}

DispatchSignals::~DispatchSignals() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (--g_users > 0) return;
  for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &g_old[i], nullptr);
}

unsigned interrupt_count() { return g_interrupts.load(std::memory_order_relaxed); }

const volatile unsigned* interrupt_counter() {
  static_assert(sizeof(g_interrupts) == sizeof(unsigned) && std::atomic<unsigned>::is_always_lock_free,
                "a lock-free atomic unsigned is a plain word");
  return reinterpret_cast<const volatile unsigned*>(&g_interrupts);
}

SignalStack::SignalStack(std::vector<unsigned char>& mem) {
  const size_t bytes = std::max<size_t>(64 * 1024, static_cast<size_t>(SIGSTKSZ));
  if (mem.size() < bytes) mem.resize(bytes);
  stack_t ss;
  std::memset(&ss, 0, sizeof ss);
  ss.ss_sp = mem.data();
  ss.ss_size = mem.size();
  ok_ = sigaltstack(&ss, &old_) == 0;
}

SignalStack::~SignalStack() {
  if (!ok_) return;
  if (old_.ss_flags & SS_DISABLE) {
    stack_t off;
    std::memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  } else {
    sigaltstack(&old_, nullptr);
  }
}

}  // namespace tmps::sim
