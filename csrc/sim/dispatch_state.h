// The state of a running dispatch, shared by the three files of the simulator's execution
// engine: scheduler.cpp (running threadgroups over workers and fibers), runtime_services.cpp
// (what kernel code calls: barriers, SIMD-group exchange, memcheck) and racecheck.cpp (the
// race check and interleaving). Internal to sim/: nothing outside those files includes it.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu_clocks.h"
#include "faults.h"
#include "fiber.h"
#include "memcheck.h"
#include "scheduler.h"
#include "signals.h"

namespace tmps::sim {

constexpr uint32_t kSimd = TMPS_SIM_SIMD_WIDTH;
constexpr unsigned char kPoison = 0xFF;  // reads of unwritten threadgroup memory: NaN / -1
constexpr size_t kArenaAlign = 4096;
// simdgroup_barrier() is a collective without data; its "site" must not collide with the
// frontend's __COUNTER__ sites.
constexpr uint32_t kSimdBarrierSite = 0x80000000u;

enum class LaneState : uint8_t { Runnable, Barrier, Collective, Done };
enum class ErrorKind { Dispatch, Limit, Interrupted, Timeout };

// One bit per byte of a bound buffer: which bytes a dispatch read / wrote (shared by the workers).
struct ByteSet {
  std::unique_ptr<std::atomic<uint64_t>[]> words;
  size_t n = 0;
  explicit ByteSet(uint64_t bytes) : words(new std::atomic<uint64_t>[(bytes + 63) / 64]), n((bytes + 63) / 64) {
    for (size_t i = 0; i < n; ++i) words[i].store(0, std::memory_order_relaxed);
  }
  void mark(uint64_t off, uint64_t size) {
    while (size) {
      const uint64_t bit = off % 64, take = std::min<uint64_t>(size, 64 - bit);
      const uint64_t mask = take == 64 ? ~uint64_t(0) : ((uint64_t(1) << take) - 1) << bit;
      std::atomic<uint64_t>& w = words[off / 64];
      if ((w.load(std::memory_order_relaxed) & mask) != mask) w.fetch_or(mask, std::memory_order_relaxed);
      off += take;
      size -= take;
    }
  }
  uint64_t count() const {
    uint64_t c = 0;
    for (size_t i = 0; i < n; ++i) c += static_cast<uint64_t>(__builtin_popcountll(words[i].load(std::memory_order_relaxed)));
    return c;
  }
};

struct Lane {
  void* sp = nullptr;
  LaneState state = LaneState::Runnable;
  uint32_t line = 0;
  uint32_t site = 0;
  uint32_t size = 0;
  // What the lane deposits: its own memory, read when the exchange completes (the lane stays
  // blocked in simd_exchange until then, so the memory is live and unchanged).
  const void* deposit = nullptr;
  // A collapsed SIMD-group's fiber: the kernel's variable holding the lane it runs (simd_entry).
  const volatile tmps_u32* lane_at = nullptr;
};

// What the race check knows of one byte of threadgroup memory: who touched it since the last
// barrier (SIMD-group index + 1; 0 none; kMany for several readers) and where.
constexpr uint16_t kMany = 0xFFFF;
struct TgShadow {
  uint32_t generation = 0;  // the threadgroup this entry belongs to (stale entries: unwritten)
  uint32_t epoch = 0;       // barrier interval of writer/reader
  uint16_t writer = 0, reader = 0;
  bool written = false;     // written since the threadgroup started
  const void* writer_pc = nullptr;
  const void* reader_pc = nullptr;
};

// Shared by the workers of one dispatch.
struct DispatchState {
  const LaunchSpec* spec = nullptr;
  const tmps_sim_kernel* kernel = nullptr;
  uint64_t total_groups = 0;
  uint32_t nthreads = 0;
  uint32_t run_threads = 0;           // loop mode runs threads [0, run_threads) (see dispatch)
  tmps_sim_thread thread_template{};  // fields equal for every thread of the dispatch
  AccessMap access;                   // memcheck: the buffers and runtime memory of this dispatch
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> timed_out{false};  // set by the watchdog
  WorkerClocks cpu;                    // the workers' CPU time: what the watchdog measures
  tmps_sim_memcheck mc{};              // memcheck's fast path: buffers and stop words
  uint32_t checks = 0;                 // TMPS_CHECK_*: $TRITON_MPS_RACECHECK, $TRITON_MPS_SIM_INTERLEAVE
  uint64_t seed = 0;                   // interleaving: the schedule's seed
  unsigned interrupts_at_start = 0;    // interrupt_count() when the dispatch began
  double timeout_s = 0;
  bool counting = false;                // counters on for this dispatch
  bool sg_mode = false;                 // collapsed SIMD-groups (Worker::sg_mode)
  uint64_t sg_stack_block = 0;          // their fiber stacks: aligned blocks of this size
  std::vector<ByteSet> read_bytes, written_bytes;  // counting: per bound buffer (AccessMap order)

  std::mutex err_mu;
  bool has_error = false;
  uint64_t err_group = 0;
  ErrorKind err_kind = ErrorKind::Dispatch;
  std::string err_message;

  // Keep the error of the lowest threadgroup: groups are handed out in order, so every
  // lower group has started and runs to its end; the report does not depend on timing.
  void report(uint64_t group, ErrorKind kind, const std::string& message) {
    std::lock_guard<std::mutex> lock(err_mu);
    const bool cancel = kind == ErrorKind::Interrupted || kind == ErrorKind::Timeout;
    const bool had_cancel = has_error && (err_kind == ErrorKind::Interrupted || err_kind == ErrorKind::Timeout);
    if (!has_error || (cancel && !had_cancel) || (cancel == had_cancel && group < err_group)) {
      has_error = true;
      err_group = group;
      err_kind = kind;
      err_message = message;
    }
    stop.store(true);
  }
};

// Ctrl-C or the watchdog asked this dispatch to stop.
inline bool cancelled(const DispatchState& d) {
  return d.timed_out.load(std::memory_order_relaxed) || interrupt_count() != d.interrupts_at_start;
}

// Per worker state, kept across dispatches so stacks and buffers are allocated once.
struct Worker {
  size_t stack_bytes = 0;
  std::vector<std::unique_ptr<FiberStack>> stacks;
  std::vector<Lane> lanes;
  std::vector<tmps_sim_thread> threads;
  std::vector<tmps_sim_exchange> snapshots;  // one per SIMD-group
  unsigned char* arena = nullptr;  // kMaxThreadgroupMemory bytes of the scheduler's arenas (not owned)
  std::vector<std::pair<uint32_t, void*>> statics;  // threadgroup_static id -> storage
  uint64_t tg_used = 0;                             // bytes of the arena in use
  uint64_t tg_dynamic = 0;                          // of which [[threadgroup(n)]] buffers
  std::array<void*, TMPS_SIM_MAX_THREADGROUP_BINDINGS> tg_buffers{};
  tmps_sim_args args{};
  std::vector<unsigned char> altstack;

  DispatchState* d = nullptr;
  uint64_t group = 0;
  bool fiber_mode = false;
  bool chain = false;  // fiber mode without interleaving: a blocking lane resumes the next (block)
  uint32_t current = 0;
  const tmps_sim_thread* cur_thread = nullptr;
  // Collapsed SIMD-groups (tmps_sim_kernel::simd_entry): one fiber per SIMD-group on its own
  // larger stack (a lane value there is an array of 32); `current` is the SIMD-group and the
  // kernel points its Lane's `lane_at` at its variable holding the lane it runs.
  bool sg_mode = false;
  std::vector<std::unique_ptr<FiberStack>> sg_stacks;
  tmps_sim_thread single{};  // the running thread when not using fibers
  void* sched_sp = nullptr;
  uintptr_t stack_top = 0;  // loop mode: kernel frames lie below this address of worker_main

  FaultTrap trap;  // where kernel code is left on a fault or an abort (faults.h)

  bool aborting = false;
  ErrorKind abort_kind = ErrorKind::Dispatch;
  std::string abort_message;

  // Race check (TMPS_CHECK_RACE): one entry per byte of the threadgroup arena, valid for the
  // threadgroup `generation` it was written in (no clearing between threadgroups).
  std::vector<TgShadow> shadow;
  uint32_t generation = 0;  // bumped at each threadgroup start
  uint32_t epoch = 0;       // threadgroup barriers passed in this threadgroup
  // Interleaving (TMPS_CHECK_INTERLEAVE): the schedule's random state, and the lanes that can run.
  uint64_t rng = 0;
  std::vector<uint32_t> runnable;
  DispatchCounters counters;  // this worker's share of the dispatch (counting on)
};

// The running GPU thread's index in its threadgroup (collapsed SIMD-groups: from the lane cursor).
inline uint32_t running_index(const Worker& w) {
  if (!w.sg_mode) return w.current;
  const volatile tmps_u32* at = w.lanes[w.current].lane_at;
  return w.current * 32u + (at ? (*at & 31u) : 0u);
}
// The running GPU thread's positions, or null between threads.
inline const tmps_sim_thread* running_thread(const Worker& w) {
  if (w.sg_mode && w.cur_thread) return &w.threads[running_index(w)];
  return w.cur_thread;
}
// The fiber stacks in use.
inline const std::vector<std::unique_ptr<FiberStack>>& fiber_stacks(const Worker& w) {
  return w.sg_mode ? w.sg_stacks : w.stacks;
}

// The worker running on this host thread (runtime_services.cpp; set by the scheduler).
extern thread_local Worker* tls_worker;

// ---- scheduler.cpp -------------------------------------------------------------------------

std::string kname(const tmps_sim_kernel* k);
std::string xyz(const tmps_u32 v[3]);
std::string cancel_message(const DispatchState& d, ErrorKind& kind);
std::string thread_desc(const Worker& w);
// Leaving kernel code (see scheduler.cpp): the message first (set_abort), then abort_kernel.
[[noreturn]] void abort_kernel(Worker* w);
void set_abort(Worker* w, ErrorKind kind, const std::string& message) noexcept;
[[noreturn]] void no_worker(const char* service);
// The worker of the calling kernel code; aborts the process outside a dispatch. Inline: every
// runtime service starts with it (a SIMD-group shuffle is a handful of instructions otherwise).
inline Worker* require_worker(const char* service) {
  Worker* w = tls_worker;
  if (__builtin_expect(!w || !w->d, 0)) no_worker(service);
  return w;
}
[[noreturn]] void stop_kernel(Worker* w);
[[noreturn]] void fail_without_fibers(Worker* w, const char* service, tmps_u32 line);
// Suspend the running lane (its state already set). See scheduler.cpp: the next lane of the
// scheduler's pass is resumed directly, without a round trip through the scheduler.
void block(Worker* w);

// ---- racecheck.cpp -------------------------------------------------------------------------

void check_threadgroup(Worker* w, uint64_t off, uint64_t size, bool write, const void* pc);
void check_threadgroup_atomic(Worker* w, uint64_t off, uint64_t size, const void* pc);
uint64_t next_random(uint64_t& state);
void maybe_yield(Worker* w);

}  // namespace tmps::sim
