// The simulator's execution engine (see scheduler.h): threadgroups over worker threads, fibers,
// collectives, the watchdog, counters. What kernel code calls is in runtime_services.cpp, the
// race check and interleaving in racecheck.cpp; the state they share in dispatch_state.h.
//
// Aborting a dispatch from kernel code: kernel frames have no destructors, and C++
// exceptions must never unwind through fibers or kernel frames. So fail() from a fiber
// switches back to the worker for good, and fail() outside fibers (and fault signals,
// faults.h) use siglongjmp back to the worker's entry. _FORTIFY_SOURCE's longjmp check rejects
// jumps between stacks, which we do on purpose.
#undef _FORTIFY_SOURCE

#include "scheduler.h"
#include "dispatch_state.h"
#include "memcheck.h"

#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "errors.h"
#include "cpu_clocks.h"
#include "faults.h"
#include "fiber.h"
#include "signals.h"

namespace tmps::sim {

namespace {

// ---- counters (scheduler.h) -------------------------------------------------------------------

std::atomic<int> g_counting{-1};  // -1: not yet read from $TRITON_MPS_SIM_COUNTERS
std::mutex g_last_mu;
DispatchCounters g_last;

}  // namespace

// ---- shared with runtime_services.cpp and racecheck.cpp (dispatch_state.h) -----------------

std::string kname(const tmps_sim_kernel* k) { return k && k->name ? k->name : "?"; }

std::string xyz(const tmps_u32 v[3]) {
  return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
}

std::string cancel_message(const DispatchState& d, ErrorKind& kind) {
  if (d.timed_out.load()) {
    kind = ErrorKind::Timeout;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", d.timeout_s);
    return "kernel '" + kname(d.kernel) + "' ran longer than TRITON_MPS_TIMEOUT = " + secs +
           " s (of CPU time, in one worker thread) and was stopped (a runaway loop? raise TRITON_MPS_TIMEOUT, or 0 "
           "for no limit)";
  }
  kind = ErrorKind::Interrupted;
  return "simulated dispatch of kernel '" + kname(d.kernel) + "' interrupted (Ctrl-C)";
}

// ---- aborting from kernel code -------------------------------------------------------------

std::string thread_desc(const Worker& w) {
  const tmps_sim_thread* t = running_thread(w);
  if (!t) return "";
  return "thread " + xyz(t->thread_position_in_grid) + " in threadgroup " + xyz(t->threadgroup_position_in_grid);
}

// Message set by the caller; never returns. No locals with destructors may be live here.
[[noreturn]] void abort_kernel(Worker* w) {
  w->aborting = true;
  if (w->fiber_mode) {
    fiber_switch(&w->lanes[w->current].sp, w->sched_sp);
    __builtin_trap();  // an aborted fiber is never resumed
  }
  siglongjmp(w->trap.jmp, 1);
}

void set_abort(Worker* w, ErrorKind kind, const std::string& message) noexcept {
  try {
    w->abort_kind = kind;
    w->abort_message = message;
  } catch (...) {
    w->abort_kind = kind;  // out of memory while formatting: keep the kind, lose the text
  }
}

[[noreturn]] void no_worker(const char* service) {
  std::fprintf(stderr, "triton-mps simulator: %s called outside a dispatch\n", service);
  std::abort();
}

// Leave kernel code because the dispatch was cancelled (Ctrl-C, watchdog).
[[noreturn]] void stop_kernel(Worker* w) {
  ErrorKind kind = ErrorKind::Dispatch;
  std::string message = cancel_message(*w->d, kind);
  set_abort(w, kind, message);
  abort_kernel(w);
}

[[noreturn]] void fail_without_fibers(Worker* w, const char* service, tmps_u32 line) {
  set_abort(w, ErrorKind::Dispatch,
            "kernel '" + kname(w->d->kernel) + "' calls " + service + " at line " + std::to_string(line) +
                " but its kernel table says it needs no fibers (needs_fibers = 0); " + thread_desc(*w));
  abort_kernel(w);
}

namespace {

// Switch from the running lane to the next one of the scheduler's pass (run_group_fibers: lanes
// in descending order, each until it blocks): the next lower runnable lane, or the scheduler
// when there is none. A lane changes only its own state while the pass runs, so the lanes run in
// exactly the order of a scheduler resuming each one in turn, with one switch per blocking lane
// instead of two. Interleaving (a random order) goes through the scheduler.
void switch_to_next(Worker* w, uint32_t from) {
  if (w->chain) {
    for (uint32_t j = from; j-- > 0;) {
      if (w->lanes[j].state != LaneState::Runnable) continue;
      w->current = j;
      w->cur_thread = &w->threads[j];
      fiber_switch(&w->lanes[from].sp, w->lanes[j].sp);
      return;
    }
  }
  fiber_switch(&w->lanes[from].sp, w->sched_sp);
}

}  // namespace

// Block the running fiber until a lane or the worker resumes it (who resumes a lane sets
// `current` and `cur_thread` first). A lane still Runnable (interleaving's random yield) always
// returns to the scheduler.
void block(Worker* w) {
  const uint32_t me = w->current;
  if (w->lanes[me].state == LaneState::Runnable) {
    fiber_switch(&w->lanes[me].sp, w->sched_sp);
    return;
  }
  switch_to_next(w, me);
}

namespace {

// ---- running threadgroups ----------------------------------------------------------------------

// Entry of every GPU-thread fiber. The worker sets `current` before the first switch in.
void fiber_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  const uint32_t lane = w->current;
  w->d->kernel->entry(&w->args, &w->threads[lane]);
  w->lanes[lane].state = LaneState::Done;
  switch_to_next(w, lane);
  __builtin_trap();  // a finished fiber is never resumed
}

// Entry of a collapsed SIMD-group's fiber (full SIMD-groups only: Scheduler::run).
void simd_fiber_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  const uint32_t sg = w->current, base = sg * kSimd;
  const tmps_u32 active = 0xffffffffu;
  w->lanes[sg].lane_at = nullptr;
  w->d->kernel->simd_entry(&w->args, &w->threads[base], active, &w->lanes[sg].lane_at);
  w->lanes[sg].state = LaneState::Done;
  switch_to_next(w, sg);
  __builtin_trap();
}

void fill_thread(const DispatchState& d, const Worker& w, uint32_t idx, uint32_t lx, uint32_t ly, uint32_t lz,
                 tmps_sim_thread& t) {
  t = d.thread_template;
  const uint32_t local[3] = {lx, ly, lz};
  for (int i = 0; i < 3; ++i) {
    t.thread_position_in_threadgroup[i] = local[i];
    t.threadgroup_position_in_grid[i] = w.single.threadgroup_position_in_grid[i];
    t.thread_position_in_grid[i] = w.single.threadgroup_position_in_grid[i] * t.threads_per_threadgroup[i] + local[i];
  }
  t.thread_index_in_threadgroup = idx;
  t.thread_index_in_simdgroup = idx % kSimd;
  t.simdgroup_index_in_threadgroup = idx / kSimd;
  t.thread_index_in_quadgroup = idx % 4;
  t.quadgroup_index_in_threadgroup = idx / 4;
}

// Fresh threadgroup: positions, poisoned [[threadgroup(n)]] buffers, no statics yet.
void start_group(Worker& w, uint64_t g) {
  DispatchState& d = *w.d;
  const auto& grid = d.spec->threadgroups;
  w.group = g;
  w.aborting = false;
  w.single = d.thread_template;
  w.single.threadgroup_position_in_grid[0] = static_cast<uint32_t>(g % grid[0]);
  w.single.threadgroup_position_in_grid[1] = static_cast<uint32_t>(g / grid[0] % grid[1]);
  w.single.threadgroup_position_in_grid[2] = static_cast<uint32_t>(g / grid[0] / grid[1]);
  w.cur_thread = nullptr;

  w.statics.clear();
  w.tg_used = 0;
  if (d.checks & TMPS_CHECK_RACE) {
    if (++w.generation == 0) {  // wrapped: stale entries could look current
      std::fill(w.shadow.begin(), w.shadow.end(), TgShadow{});
      w.generation = 1;
    }
    w.epoch = 0;
  }
  if (d.checks & TMPS_CHECK_INTERLEAVE) w.rng = d.seed ^ (g * 0xD1B54A32D192ED03ull);
  for (uint32_t n = 0; n < TMPS_SIM_MAX_THREADGROUP_BINDINGS; ++n) {
    uint32_t len = d.spec->threadgroup_lengths[n];
    if (!len) {
      w.tg_buffers[n] = nullptr;
      continue;
    }
    uint64_t off = (w.tg_used + 15) / 16 * 16;
    w.tg_buffers[n] = w.arena + off;
    std::memset(w.tg_buffers[n], kPoison, len);
    w.tg_used = off + len;
  }
  w.tg_dynamic = w.tg_used;
}

void run_group_loop(Worker& w) {
  DispatchState& d = *w.d;
  const auto& tpg = d.spec->threads_per_group;
  auto entry = d.kernel->entry;
  tmps_sim_thread& t = w.single;
  w.cur_thread = &t;
  // Highest thread first, thread 0 last (also in fiber mode): Triton stores a uniform value
  // from thread 0 only and every thread loads it, so any thread that loads after thread 0's
  // store would see a value no GPU thread sees (a GPU starts the threadgroup's SIMD-groups
  // together, lanes in lockstep). Any order is a legal schedule; this one keeps that pattern
  // (`x = load(p); ...; store(p, f(x))`, a load address computed from x) as on hardware.
  const uint32_t plane = tpg[0] * tpg[1];
  w.trap.in_kernel = 1;
  for (uint32_t idx = d.run_threads; idx-- > 0;) {
    const uint32_t local[3] = {idx % tpg[0], idx / tpg[0] % tpg[1], idx / plane};
    for (int i = 0; i < 3; ++i) {
      t.thread_position_in_threadgroup[i] = local[i];
      t.thread_position_in_grid[i] = t.threadgroup_position_in_grid[i] * tpg[i] + local[i];
    }
    t.thread_index_in_threadgroup = idx;
    t.thread_index_in_simdgroup = idx % kSimd;
    t.simdgroup_index_in_threadgroup = idx / kSimd;
    t.thread_index_in_quadgroup = idx % 4;
    t.quadgroup_index_in_threadgroup = idx / 4;
    w.current = idx;
    entry(&w.args, &t);
  }
  w.trap.in_kernel = 0;
}

// Complete every SIMD-group collective that can: no lane of the group is runnable (true
// after a full pass), the participants are the lanes waiting at the same site as the
// lowest-numbered lane waiting at a collective. Lanes at a threadgroup barrier sit out.
bool complete_collectives(Worker& w, uint32_t n) {
  bool progressed = false;
  for (uint32_t lo = 0; lo < n; lo += kSimd) {
    const uint32_t hi = std::min(n, lo + kSimd);
    uint32_t first = hi;
    for (uint32_t i = lo; i < hi; ++i)
      if (w.lanes[i].state == LaneState::Collective) {
        first = i;
        break;
      }
    if (first == hi) continue;
    const uint32_t site = w.lanes[first].site;
    const uint32_t size = w.lanes[first].size;
    tmps_sim_exchange& snap = w.snapshots[lo / kSimd];
    uint32_t mask = 0;
    for (uint32_t i = first; i < hi; ++i) {
      Lane& l = w.lanes[i];
      if (l.state != LaneState::Collective || l.site != site) continue;
      mask |= 1u << (i - lo);
      if (size) std::memcpy(snap.value[i - lo], l.deposit, std::min(size, l.size));
      l.state = LaneState::Runnable;
    }
    snap.active_mask = mask;
    snap.size = size;
    snap.shim_state = 0;  // a new exchange: nothing computed from it yet (tmps_sim_abi.h)
    progressed = true;
    if (w.d->counting) {
      DispatchCounters& c = w.counters;
      if (site == kSimdBarrierSite) {
        ++c.simdgroup_barriers;
      } else if (site & TMPS_SIM_SITE_MATRIX) {
        const uint64_t ops = (site >> TMPS_SIM_SITE_MATRIX_OPS_SHIFT) & TMPS_SIM_SITE_MATRIX_OPS_MASK;
        c.simdgroup_matrix_ops += ops;
        ++c.simdgroup_matrix_exchanges;
        c.simdgroup_matrix_flops += ops * 2 * 8 * 8 * 8;
      } else {
        ++c.simd_collectives;
      }
    }
  }
  return progressed;
}

// "threads 0-31 wait at line 12 while threads 32-63 have returned"
std::string describe_lanes(const Worker& w, uint32_t n) {
  // key: (state, line) -> index ranges, in order of first appearance
  std::vector<std::pair<std::pair<int, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>>> groups;
  for (uint32_t i = 0; i < n;) {
    const Lane& l = w.lanes[i];
    std::pair<int, uint32_t> key{static_cast<int>(l.state), l.state == LaneState::Done ? 0 : l.line};
    uint32_t j = i + 1;
    while (j < n && static_cast<int>(w.lanes[j].state) == key.first &&
           (w.lanes[j].state == LaneState::Done || w.lanes[j].line == key.second))
      ++j;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    it->second.emplace_back(i, j - 1);
    i = j;
  }
  std::ostringstream os;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& ranges = groups[gi].second;
    os << (gi == 0 ? "" : gi == 1 ? " while " : ", ");
    uint32_t count = 0;
    for (const auto& r : ranges) count += r.second - r.first + 1;
    os << (count == 1 ? "thread " : "threads ");
    for (size_t k = 0; k < ranges.size() && k < 6; ++k) {
      if (k) os << ",";
      os << ranges[k].first;
      if (ranges[k].second != ranges[k].first) os << "-" << ranges[k].second;
    }
    if (ranges.size() > 6) os << ",...";
    auto state = static_cast<LaneState>(groups[gi].first.first);
    const char* verb = count == 1 ? "waits" : "wait";
    if (state == LaneState::Done)
      os << (count == 1 ? " has returned" : " have returned");
    else if (state == LaneState::Barrier)
      os << " " << verb << " at a threadgroup barrier at line " << groups[gi].first.second;
    else if (state == LaneState::Collective)
      os << " " << verb << " at a SIMD-group function at line " << groups[gi].first.second;
    else
      os << " are runnable";
  }
  return os.str();
}

void run_group_fibers(Worker& w) {
  DispatchState& d = *w.d;
  // Fibers: one per thread, or one per SIMD-group when collapsed (then nothing but threadgroup
  // barriers blocks them, and a SIMD-group's functions complete inside its own call).
  const uint32_t n = w.sg_mode ? (d.nthreads + kSimd - 1) / kSimd : d.nthreads;
  const auto& tpg = d.spec->threads_per_group;
  {
    uint32_t idx = 0;
    for (uint32_t z = 0; z < tpg[2]; ++z)
      for (uint32_t y = 0; y < tpg[1]; ++y)
        for (uint32_t x = 0; x < tpg[0]; ++x, ++idx) fill_thread(d, w, idx, x, y, z, w.threads[idx]);
  }
  for (uint32_t i = 0; i < n; ++i) {
    w.lanes[i].state = LaneState::Runnable;
    w.lanes[i].sp = w.sg_mode ? fiber_prepare(*w.sg_stacks[i], simd_fiber_main, &w, (i % 61) * 64)
                              : fiber_prepare(*w.stacks[i], fiber_main, &w, (i % 61) * 64);
  }
  const bool interleave = (d.checks & TMPS_CHECK_INTERLEAVE) != 0;
  auto resume = [&w](uint32_t i) {
    w.current = i;
    w.cur_thread = &w.threads[i];
    w.trap.in_kernel = 1;
    fiber_switch(&w.sched_sp, w.lanes[i].sp);
    w.trap.in_kernel = 0;
  };
  for (;;) {
    if (interleave) {  // a random runnable lane at a time, until none is runnable
      w.runnable.clear();
      for (uint32_t i = 0; i < n; ++i)
        if (w.lanes[i].state == LaneState::Runnable) w.runnable.push_back(i);
      while (!w.runnable.empty()) {
        const size_t k = next_random(w.rng) % w.runnable.size();
        const uint32_t i = w.runnable[k];
        resume(i);
        if (w.aborting) return;
        if (w.lanes[i].state != LaneState::Runnable) {
          w.runnable[k] = w.runnable.back();
          w.runnable.pop_back();
        }
      }
    } else {  // descending lane order (see run_group_loop), each until it blocks
      // The highest runnable lane; it and the lanes after it pass control down the pass
      // themselves (switch_to_next), and the last one returns here.
      uint32_t i = n;
      while (i-- > 0 && w.lanes[i].state != LaneState::Runnable) {}
      if (i < n) {
        resume(i);
        if (w.aborting) return;
      }
    }
    if (complete_collectives(w, n)) continue;
    // Nothing runnable and no collective pending: everyone left is at a threadgroup barrier.
    uint32_t waiting = 0, done = 0, other = 0;
    bool same_line = true;
    uint32_t line = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const Lane& l = w.lanes[i];
      if (l.state == LaneState::Done) {
        ++done;
      } else if (l.state == LaneState::Barrier) {
        if (waiting++ == 0) line = l.line;
        same_line = same_line && l.line == line;
      } else {
        ++other;
      }
    }
    if (waiting == 0 && other == 0) return;  // threadgroup finished
    if (other == 0 && done == 0 && same_line) {  // the common case: release the barrier
      if (d.counting) ++w.counters.barriers;
      for (uint32_t i = 0; i < n; ++i) w.lanes[i].state = LaneState::Runnable;
      ++w.epoch;
      continue;
    }
    w.cur_thread = nullptr;
    const std::string where = " in threadgroup " + xyz(w.single.threadgroup_position_in_grid);
    if (other == 0) {
      set_abort(&w, ErrorKind::Dispatch,
                "divergent barrier in kernel '" + kname(d.kernel) + "'" + where + ": " + describe_lanes(w, n) +
                    " (every thread of a threadgroup must reach the same threadgroup_barrier)");
      w.aborting = true;
      return;
    }
    // Cannot happen with the rules above (a pending collective always completes); kept so
    // a scheduler bug reports instead of hanging.
    set_abort(&w, ErrorKind::Dispatch,
              "deadlock in kernel '" + kname(d.kernel) + "'" + where + ": " + describe_lanes(w, n));
    w.aborting = true;
    return;
  }
}

// $TRITON_MPS_SIM_COLLAPSE=0: run every kernel on one fiber per thread (the collapsed entries
// unused), to compare or to rule the collapse out.
bool collapse_enabled() {
  const char* v = std::getenv("TRITON_MPS_SIM_COLLAPSE");
  if (!v || !*v || std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  throw InvalidArgument(std::string("TRITON_MPS_SIM_COLLAPSE must be 0 or 1, got '") + v + "'");
}


// Per-dispatch buffers of a worker; stacks only grow.
void prepare_worker(Worker& w, DispatchState& d) {
  w.d = &d;
  w.counters = DispatchCounters{};
  w.fiber_mode = d.kernel->needs_fibers != 0 || (d.checks & TMPS_CHECK_INTERLEAVE) != 0;
  w.chain = w.fiber_mode && (d.checks & TMPS_CHECK_INTERLEAVE) == 0;
  w.sg_mode = d.sg_mode;
  if ((d.checks & TMPS_CHECK_RACE) && w.shadow.empty()) w.shadow.resize(kMaxThreadgroupMemory);
  w.aborting = false;
  w.trap.sig = 0;
  w.args.buffers = d.spec->buffers.data();
  w.args.buffer_sizes = d.spec->buffer_sizes.data();
  w.args.threadgroup_buffers = w.tg_buffers.data();
  if (w.fiber_mode) {
    const uint32_t n = d.nthreads;
    while (w.stacks.size() < n) w.stacks.push_back(std::make_unique<FiberStack>(w.stack_bytes));
    if (w.lanes.size() < n) w.lanes.resize(n);
    if (w.threads.size() < n) w.threads.resize(n);
    const size_t groups = (n + kSimd - 1) / kSimd;
    if (w.snapshots.size() < groups) w.snapshots.resize(groups);
    if (w.sg_mode)  // a lane value is 32 values here: 32 times a thread's stack
      while (w.sg_stacks.size() < groups) w.sg_stacks.push_back(std::make_unique<FiberStack>(0, d.sg_stack_block));
  }
}

// Runs threadgroups until none is left or the dispatch stops. Holds no objects with
// destructors: siglongjmp lands here from kernel code.
void run_groups(Worker& w, DispatchState& d) {
  if (sigsetjmp(w.trap.jmp, 1) != 0) {
    w.trap.in_kernel = 0;
    if (w.trap.sig != 0)
      d.report(w.group, ErrorKind::Dispatch,
               fault_message(w.trap, "kernel '" + kname(d.kernel) + "' (" + thread_desc(w) + ")",
                             w.fiber_mode ? &fiber_stacks(w) : nullptr, w.sg_mode ? d.sg_stack_block : w.stack_bytes));
    else
      d.report(w.group, w.abort_kind, w.abort_message);
    return;
  }
  for (;;) {
    if (d.stop.load(std::memory_order_relaxed)) return;
    if (cancelled(d)) {
      ErrorKind kind = ErrorKind::Dispatch;
      std::string message = cancel_message(d, kind);
      d.report(w.group, kind, message);
      return;
    }
    const uint64_t g = d.next.fetch_add(1);
    if (g >= d.total_groups) return;
    start_group(w, g);
    if (w.fiber_mode)
      run_group_fibers(w);
    else
      run_group_loop(w);
    if (w.aborting) {
      d.report(g, w.abort_kind, w.abort_message);
      return;
    }
  }
}

void worker_main(Worker& w, DispatchState& d) {
  Worker* prev = tls_worker;
  tls_worker = &w;
  ThreadFaultTrap trap(w.trap);
  w.stack_top = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const size_t clock = d.cpu.enter();
  try {
    prepare_worker(w, d);
    SignalStack alt(w.altstack);
    run_groups(w, d);
  } catch (const std::exception& e) {
    d.report(w.group, ErrorKind::Dispatch, std::string("simulator: ") + e.what());
  }
  d.cpu.leave(clock);
  w.d = nullptr;
  w.cur_thread = nullptr;
  tls_worker = prev;
}

// $TRITON_MPS_TIMEOUT: CPU seconds one worker of a dispatch may use (default 300; 0: no limit).
double dispatch_timeout_s() {
  const char* v = std::getenv("TRITON_MPS_TIMEOUT");
  if (!v || !*v) return 300.0;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(t >= 0) || t > 1e9)
    throw InvalidArgument(std::string("TRITON_MPS_TIMEOUT must be a number of seconds >= 0 (0: no limit), got '") + v + "'");
  return t;
}

// $TRITON_MPS_RACECHECK (0/1) and $TRITON_MPS_SIM_INTERLEAVE (a seed; 0 or unset: off).
uint32_t dispatch_checks(uint64_t& seed) {
  uint32_t checks = 0;
  const char* v = std::getenv("TRITON_MPS_RACECHECK");
  if (v && *v) {
    if (std::strcmp(v, "1") == 0)
      checks |= TMPS_CHECK_RACE;
    else if (std::strcmp(v, "0") != 0)
      throw InvalidArgument(std::string("TRITON_MPS_RACECHECK must be 0 or 1, got '") + v + "'");
  }
  v = std::getenv("TRITON_MPS_SIM_INTERLEAVE");
  if (v && *v) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long x = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || v[0] == '-')
      throw InvalidArgument(std::string("TRITON_MPS_SIM_INTERLEAVE must be a seed (a non-negative integer; 0: off), got '") +
                            v + "'");
    if (x) checks |= TMPS_CHECK_INTERLEAVE;
    seed = x;
  }
  return checks;
}

unsigned default_workers() {
  if (const char* s = std::getenv("TRITON_MPS_SIM_THREADS"); s && *s) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 1 || v > 4096)
      throw InvalidArgument(std::string("TRITON_MPS_SIM_THREADS must be a number of worker threads from 1 to 4096, got '") + s + "'");
    return static_cast<unsigned>(v);
  }
  // The CPUs this process may run on. Not divided among pytest-xdist's worker processes:
  // measured on 2 CPUs, two test_conversions iterations side by side ran 9% faster with one
  // thread each, but the whole file under -n 2 took 22.0 min instead of 20.1 (a worker left
  // alone at the end runs on one CPU).
  unsigned cpus = std::thread::hardware_concurrency();
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) cpus = static_cast<unsigned>(CPU_COUNT(&set));
#endif
  return cpus ? cpus : 1;
}

}  // namespace

// One thread per scheduler that sets a dispatch's `timed_out` flag once one of its workers used
// the timeout's seconds of CPU time. CPU time, not wall time: on a loaded machine a healthy
// dispatch gets fewer cycles per second and must not be stopped for it; a runaway loop keeps
// its worker busy and still is. Between checks it sleeps for the CPU time left (a thread's CPU
// clock never runs faster than the wall clock). Arming and disarming cost a lock and a notify,
// not a thread per dispatch.
class Watchdog {
 public:
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void arm(std::atomic<bool>* flag, volatile tmps_u32* stop_word, WorkerClocks* clocks, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    flag_ = flag;
    stop_word_ = stop_word;
    clocks_ = clocks;
    seconds_ = seconds;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    flag_ = nullptr;
    clocks_ = nullptr;
    cv_.notify_all();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      if (!flag_) {
        cv_.wait(lock);
        continue;
      }
      const double left = seconds_ - clocks_->max_seconds();
      if (left <= 0) {
        flag_->store(true);
        *stop_word_ = 1;
        flag_ = nullptr;
        clocks_ = nullptr;
        continue;
      }
      cv_.wait_for(lock, std::chrono::duration<double>(std::clamp(left, 0.01, 3600.0)));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::atomic<bool>* flag_ = nullptr;
  volatile tmps_u32* stop_word_ = nullptr;
  WorkerClocks* clocks_ = nullptr;
  double seconds_ = 0;
  bool quit_ = false;
};


void set_counting(bool on) { g_counting.store(on ? 1 : 0); }

bool counting() {
  int v = g_counting.load();
  if (v < 0) {
    const char* e = std::getenv("TRITON_MPS_SIM_COUNTERS");
    v = e && *e && std::strcmp(e, "0") != 0 ? 1 : 0;
    int expected = -1;
    g_counting.compare_exchange_strong(expected, v);
    v = g_counting.load();
  }
  return v == 1;
}

DispatchCounters last_dispatch_counters() {
  std::lock_guard<std::mutex> lock(g_last_mu);
  return g_last;
}

Scheduler::Scheduler(unsigned workers, size_t stack_bytes)
    : num_workers_(workers ? workers : default_workers()),
      stack_bytes_(stack_bytes ? stack_bytes : default_fiber_stack_bytes()) {}

Scheduler::~Scheduler() = default;

namespace {

// Internal assertions, not the user-facing validation: Launcher::build_dispatch refuses every
// launch over Metal's limits (threads per threadgroup, the kernel's
// [[max_total_threads_per_threadgroup]], threadgroup memory) with the error the user sees. A
// dispatch reaching the simulator over them is a bug; checked here because the worker's
// threadgroup arena is kMaxThreadgroupMemory bytes (and the gtests drive run() directly).
void check_limits(const LaunchSpec& spec, uint64_t nthreads) {
  const tmps_sim_kernel* k = spec.kernel;
  const auto& tpg = spec.threads_per_group;
  const auto bug = [&](const std::string& what) {
    return LimitExceeded("kernel '" + kname(k) + "': internal error: a dispatch of " + what +
                         " reached the simulator (Launcher::build_dispatch refuses such launches; a bug)");
  };
  const std::string shape = std::to_string(tpg[0]) + "x" + std::to_string(tpg[1]) + "x" + std::to_string(tpg[2]);
  if (nthreads > kMaxThreadsPerThreadgroup)
    throw bug(std::to_string(nthreads) + " threads per threadgroup (" + shape + "), over Metal's limit of " +
              std::to_string(kMaxThreadsPerThreadgroup));
  if (k->max_total_threads_per_threadgroup && nthreads > k->max_total_threads_per_threadgroup)
    throw bug(std::to_string(nthreads) + " threads per threadgroup (" + shape + "), over its " +
              "[[max_total_threads_per_threadgroup(" + std::to_string(k->max_total_threads_per_threadgroup) + ")]]");
  uint64_t dynamic = 0;
  for (uint32_t len : spec.threadgroup_lengths)
    if (len) dynamic = (dynamic + 15) / 16 * 16 + len;
  if (dynamic > kMaxThreadgroupMemory)
    throw bug(std::to_string(dynamic) + " bytes of [[threadgroup(n)]] memory, over Metal's limit of " +
              std::to_string(kMaxThreadgroupMemory) + " bytes");
}

// Memcheck's fast-path ranges for a dispatch of `n` workers.
void set_fast_ranges(DispatchState& d, const LaunchSpec& spec, const std::vector<std::unique_ptr<Worker>>& workers,
                     unsigned n, uint32_t checks) {
  // The fast path's ranges (none while counting: every access then reaches rt_check_access):
  // the buffers (exact), the runtime table and argument arrays, and the workers' whole
  // threadgroup arenas (the slow path checks the part in use).
  auto add = [&](uintptr_t lo, uintptr_t hi) {
    if (d.mc.count == TMPS_SIM_MC_RANGES) return;  // the slow path still allows what is left out
    d.mc.lo[d.mc.count] = lo;
    d.mc.hi[d.mc.count] = hi;
    ++d.mc.count;
  };
  // Interleaving sees every access: no range at all (d.mc starts empty; the kernels' inline
  // checks, checked_access.h, read the ranges without the count).
  if (checks & TMPS_CHECK_INTERLEAVE) return;
  // The arenas first: the fast path tries the ranges in order, and a tl.dot kernel makes most
  // of its accesses there (staged operands, simdgroup_load/store), many times its device
  // accesses. The workers' arenas are consecutive (Scheduler::run): one range. The race check
  // sees every threadgroup access.
  if (!(checks & TMPS_CHECK_RACE)) {
    const auto a = reinterpret_cast<uintptr_t>(workers[0]->arena);
    add(a, a + uint64_t(n) * kMaxThreadgroupMemory);
  }
  for (uint32_t i = 0; i < TMPS_SIM_MAX_BUFFERS; ++i)
    if (spec.buffers[i]) {
      const auto ptr = reinterpret_cast<uintptr_t>(spec.buffers[i]);
      add(spec.buffer_starts[i] ? reinterpret_cast<uintptr_t>(spec.buffer_starts[i]) : ptr, ptr + spec.buffer_sizes[i]);
    }
  add(reinterpret_cast<uintptr_t>(runtime()), reinterpret_cast<uintptr_t>(runtime() + 1));
  add(reinterpret_cast<uintptr_t>(&spec), reinterpret_cast<uintptr_t>(&spec + 1));
}

// The dispatch's counters: the workers' sums, per buffer too.
DispatchCounters sum_counters(const DispatchState& d, const LaunchSpec& spec,
                              const std::vector<std::unique_ptr<Worker>>& workers, unsigned n, uint64_t ngroups,
                              uint64_t nthreads) {
  DispatchCounters total;
  total.valid = true;
  total.memory_counted = spec.memcheck_slot != nullptr;
  total.threadgroups = ngroups;
  total.threads_per_threadgroup = nthreads;
  for (unsigned i = 0; i < n; ++i) {
    const DispatchCounters& c = workers[i]->counters;
    for (auto [dst, src] : {std::pair{&total.device_bytes_read, c.device_bytes_read},
                            {&total.device_bytes_written, c.device_bytes_written},
                            {&total.device_loads, c.device_loads},
                            {&total.device_stores, c.device_stores},
                            {&total.threadgroup_bytes_read, c.threadgroup_bytes_read},
                            {&total.threadgroup_bytes_written, c.threadgroup_bytes_written},
                            {&total.barriers, c.barriers},
                            {&total.simd_collectives, c.simd_collectives},
                            {&total.simdgroup_barriers, c.simdgroup_barriers},
                            {&total.simdgroup_matrix_ops, c.simdgroup_matrix_ops},
                            {&total.simdgroup_matrix_flops, c.simdgroup_matrix_flops},
                            {&total.simdgroup_matrix_exchanges, c.simdgroup_matrix_exchanges},
                            {&total.scalar_flops, c.scalar_flops}})
      *dst += src;
  }
  total.buffers.resize(d.access.buffer_count());
  for (uint32_t p = 0; p < total.buffers.size(); ++p) {
    DispatchCounters::Buffer& b = total.buffers[p];
    b.index = d.access.buffer_index(p);
    b.bytes = d.access.buffer_bytes(p);
    for (unsigned i = 0; i < n; ++i) {
      const auto& wb = workers[i]->counters.buffers;
      if (p < wb.size()) b.read += wb[p].read, b.written += wb[p].written;
    }
    b.distinct_read = d.read_bytes[p].count();
    b.distinct_written = d.written_bytes[p].count();
    total.device_distinct_read += b.distinct_read;
    total.device_distinct_written += b.distinct_written;
  }
  return total;
}

}  // namespace

DispatchCounters Scheduler::run(const LaunchSpec& spec) {
  const tmps_sim_kernel* k = spec.kernel;
  if (!k || !k->entry) throw InvalidArgument("simulator: dispatch without a kernel entry point");
  const auto& tpg = spec.threads_per_group;
  const auto& grid = spec.threadgroups;
  const uint64_t nthreads = uint64_t(tpg[0]) * tpg[1] * tpg[2];
  const uint64_t ngroups = uint64_t(grid[0]) * grid[1] * grid[2];
  check_limits(spec, nthreads);
  if (nthreads == 0 || ngroups == 0) return {};
  const uint64_t group_end = spec.group_end ? std::min(spec.group_end, ngroups) : ngroups;
  if (spec.group_begin >= group_end) return {};

  const double timeout = dispatch_timeout_s();
  uint64_t seed = 0;
  const uint32_t checks = dispatch_checks(seed);
  if (checks && !spec.memcheck_slot)
    throw InvalidArgument("kernel '" + kname(k) +
                          "': TRITON_MPS_RACECHECK and TRITON_MPS_SIM_INTERLEAVE need kernels built with memcheck "
                          "(unset TRITON_MPS_MEMCHECK or set it to 1)");
  std::lock_guard<std::mutex> lock(mu_);
  DispatchState d;
  d.checks = checks;
  d.seed = seed;
  d.spec = &spec;
  d.timeout_s = timeout;
  d.interrupts_at_start = interrupt_count();
  d.kernel = k;
  d.next.store(spec.group_begin);
  d.total_groups = group_end;
  d.nthreads = static_cast<uint32_t>(nthreads);
  d.counting = counting();
  // Collapsed SIMD-groups (tmps_sim_kernel::simd_entry) unless interleaving (a random order of
  // single threads), counting (the counters count exchanges) or TRITON_MPS_SIM_COLLAPSE=0. Their
  // stacks hold 32 lanes' values: 32 times a thread's, in aligned blocks (memcheck's fast path).
  // Full SIMD-groups only (the collapsed code has no mask of absent lanes).
  d.sg_mode = k->needs_fibers && k->simd_entry && nthreads % kSimd == 0 && !(checks & TMPS_CHECK_INTERLEAVE) &&
              !d.counting && collapse_enabled();
  if (d.sg_mode) {
    d.sg_stack_block = 1u << 20;
    while (d.sg_stack_block < uint64_t(stack_bytes_) * kSimd) d.sg_stack_block *= 2;
    d.mc.stack_mask = d.sg_stack_block - 1;
  }
  // Threads the compiler declared free of side effects (tmps_sim_kernel::effect_threads) only
  // duplicate lower threads' work: skipped when they cannot communicate with the others (no
  // barriers or SIMD-group functions: loop mode). Every check and the counters see all threads.
  d.run_threads = d.nthreads;
  if (k->effect_threads && !k->needs_fibers && !checks && !d.counting)
    d.run_threads = std::min(d.nthreads, k->effect_threads);
  tmps_sim_thread& t = d.thread_template;
  for (int i = 0; i < 3; ++i) {
    t.threads_per_threadgroup[i] = tpg[i];
    t.threadgroups_per_grid[i] = grid[i];
    t.threads_per_grid[i] = grid[i] * tpg[i];
  }
  t.simdgroups_per_threadgroup = static_cast<uint32_t>((nthreads + kSimd - 1) / kSimd);
  t.threads_per_simdgroup = kSimd;
  t.quadgroups_per_threadgroup = static_cast<uint32_t>((nthreads + 3) / 4);
  d.access.reset(spec);
  if (d.counting)
    for (uint32_t i = 0; i < d.access.buffer_count(); ++i) {
      d.read_bytes.emplace_back(d.access.buffer_bytes(i));
      d.written_bytes.emplace_back(d.access.buffer_bytes(i));
    }
  const unsigned n = static_cast<unsigned>(std::min<uint64_t>(num_workers_, group_end - spec.group_begin));
  while (workers_.size() < n) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->stack_bytes = stack_bytes_;
  }
  // Threadgroup memory: one block for every worker, allocated once (before the dispatch
  // publishes its ranges), so that memcheck's fast path sees the workers' arenas as one range
  // (a checked access's hint, checked_access.h, is then the same whichever worker runs it).
  if (!arenas_) {
    void* p = std::aligned_alloc(kArenaAlign, size_t(num_workers_) * kMaxThreadgroupMemory);
    if (!p) throw OutOfMemory("simulator: cannot allocate threadgroup memory");
    arenas_.reset(static_cast<unsigned char*>(p));
  }
  for (unsigned i = 0; i < n; ++i) workers_[i]->arena = arenas_.get() + size_t(i) * kMaxThreadgroupMemory;
  if (spec.memcheck_slot && !d.counting) set_fast_ranges(d, spec, workers_, n, checks);
  if (spec.memcheck_slot) {
    d.mc.checks = checks;
    d.mc.interrupts = interrupt_counter();
    d.mc.interrupts_at_start = d.interrupts_at_start;
  }
  // Published for kernel code for the dispatch's duration (workers start below).
  struct Publish {
    const tmps_sim_memcheck** slot;
    ~Publish() {
      if (slot) *slot = nullptr;
    }
  } publish{spec.memcheck_slot};
  if (spec.memcheck_slot) *spec.memcheck_slot = &d.mc;

  DispatchSignals signals(on_fault);
  if (timeout > 0) {
    if (!watchdog_) watchdog_ = std::make_unique<Watchdog>();
    watchdog_->arm(&d.timed_out, &d.mc.stop, &d.cpu, timeout);
  }
  std::vector<std::thread> threads;
  try {
    for (unsigned i = 1; i < n; ++i) threads.emplace_back(worker_main, std::ref(*workers_[i]), std::ref(d));
  } catch (const std::exception& e) {
    d.report(0, ErrorKind::Dispatch, std::string("simulator: cannot start worker threads: ") + e.what());
  }
  worker_main(*workers_[0], d);
  for (auto& th : threads) th.join();
  if (watchdog_) watchdog_->disarm();
  if (d.counting) {
    DispatchCounters total = sum_counters(d, spec, workers_, n, ngroups, nthreads);
    {
      std::lock_guard<std::mutex> lock(g_last_mu);
      g_last = total;
    }
    if (!d.has_error) return total;
  }

  if (d.has_error) {
    if (d.err_kind == ErrorKind::Limit) throw LimitExceeded(d.err_message);
    if (d.err_kind == ErrorKind::Interrupted) throw Interrupted(d.err_message);
    throw DispatchError(d.err_message);
  }
  return {};
}

}  // namespace tmps::sim
