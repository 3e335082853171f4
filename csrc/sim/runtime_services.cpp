// The runtime services kernel code calls through `tmps_sim_rt` (include/tmps_sim_abi.h):
// barriers, SIMD-group exchange, threadgroup statics, fail(), memcheck's access checks with the
// counters and the checks of racecheck.cpp behind them, and flop counting. Each one finds its
// worker through tls_worker, set by the scheduler while the worker runs kernel code.
#include "dispatch_state.h"

#include <cstring>
#include <string>

namespace tmps::sim {

thread_local Worker* tls_worker = nullptr;

namespace {

// ---- runtime services ----------------------------------------------------------------------

void rt_threadgroup_barrier(tmps_u32 mem_flags, tmps_u32 line) {
  Worker* w = require_worker("threadgroup_barrier");
  // A device-memory barrier is where a kernel's lock gets its acquire/release: the lock's
  // atomics are relaxed and its data plain accesses of other threads (issue 21, item 9). All
  // threads of a threadgroup run on this host thread, so one host fence here orders them all
  // against the lock; without it a weakly ordered host (arm64) loses updates under the lock.
  if (mem_flags & TMPS_MEM_DEVICE) std::atomic_thread_fence(std::memory_order_seq_cst);
  if (cancelled(*w->d)) stop_kernel(w);
  if (!w->fiber_mode) fail_without_fibers(w, "threadgroup_barrier", line);
  Lane& l = w->lanes[w->current];
  l.state = LaneState::Barrier;
  l.line = line;
  block(w);
}

void rt_simdgroup_barrier(tmps_u32 /*mem_flags*/, tmps_u32 line) {
  Worker* w = require_worker("simdgroup_barrier");
  if (cancelled(*w->d)) stop_kernel(w);
  if (!w->fiber_mode) fail_without_fibers(w, "simdgroup_barrier", line);
  Lane& l = w->lanes[w->current];
  l.state = LaneState::Collective;
  l.site = kSimdBarrierSite;
  l.line = line;
  l.size = 0;
  block(w);
}

const tmps_sim_exchange* rt_simd_exchange(const void* value, tmps_u32 size, tmps_u32 site, tmps_u32 line) {
  Worker* w = require_worker("simd_exchange");
  if (cancelled(*w->d)) stop_kernel(w);
  if (!w->fiber_mode) fail_without_fibers(w, "a SIMD-group function", line);
  if (w->sg_mode) {  // a collapsed kernel exchanges within its own call (tmps_metal_simd.h)
    set_abort(w, ErrorKind::Dispatch,
              "simulator: internal error: kernel '" + kname(w->d->kernel) + "' called the fiber exchange at line " +
                  std::to_string(line) + " from its collapsed SIMD-group entry (set TRITON_MPS_SIM_COLLAPSE=0 and report it)");
    abort_kernel(w);
  }
  if (size > TMPS_SIM_EXCHANGE_SLOT) {
    set_abort(w, ErrorKind::Dispatch,
              "kernel '" + kname(w->d->kernel) + "': SIMD-group exchange of " + std::to_string(size) +
                  " bytes at line " + std::to_string(line) + " exceeds the simulator's " +
                  std::to_string(TMPS_SIM_EXCHANGE_SLOT) + "-byte slot");
    abort_kernel(w);
  }
  Lane& l = w->lanes[w->current];
  l.state = LaneState::Collective;
  l.site = site & ~kSimdBarrierSite;
  l.line = line;
  l.size = size;
  l.deposit = value;
  block(w);
  tmps_sim_exchange& snap = w->snapshots[w->current / kSimd];
  snap.lane = w->current % kSimd;  // for this lane, until it next calls the runtime (tmps_sim_abi.h)
  return &snap;
}

void* rt_threadgroup_static(tmps_u32 id, tmps_u64 size, tmps_u64 align, tmps_u32 line) {
  Worker* w = require_worker("threadgroup_static");
  for (const auto& s : w->statics)
    if (s.first == id) return s.second;
  uint64_t a = std::max<uint64_t>(16, std::min<uint64_t>(align ? align : 16, kArenaAlign));
  uint64_t off = (w->tg_used + a - 1) / a * a;
  if (off + size > kMaxThreadgroupMemory || size > kMaxThreadgroupMemory) {
    set_abort(w, ErrorKind::Limit,
              "kernel '" + kname(w->d->kernel) + "' uses more threadgroup memory than Metal allows: " +
                  std::to_string(size) + " bytes declared at line " + std::to_string(line) + " on top of " +
                  std::to_string(w->tg_used) + " bytes already in use (" + std::to_string(w->tg_dynamic) +
                  " of them [[threadgroup(n)]] buffers) exceeds " + std::to_string(kMaxThreadgroupMemory) +
                  " bytes");
    abort_kernel(w);
  }
  void* p = w->arena + off;
  std::memset(p, kPoison, size);
  w->tg_used = off + size;
  w->statics.emplace_back(id, p);
  return p;
}

void rt_fail(tmps_u32 line, const char* message) {
  Worker* w = require_worker("fail");
  set_abort(w, ErrorKind::Dispatch,
            "kernel '" + kname(w->d->kernel) + "' failed at " +
                SourceOrigins::annotate("line " + std::to_string(line), w->d->spec->origins) + ": " +
                (message ? message : "") + " (" + thread_desc(*w) + ")");
  abort_kernel(w);
}

const tmps_sim_thread* rt_current_thread() { return running_thread(*require_worker("current_thread")); }

// True if [a, a + size) lies inside [lo, hi).
inline bool within(uintptr_t a, uint64_t size, uintptr_t lo, uintptr_t hi) { return a >= lo && a < hi && size <= hi - a; }

template <class T>
inline bool within(uintptr_t a, uint64_t size, const std::vector<T>& v) {
  const auto lo = reinterpret_cast<uintptr_t>(v.data());
  return within(a, size, lo, lo + v.size() * sizeof(T));
}

// Where an access lands, for memcheck and the extra checks.
enum class Region { Buffer, Threadgroup, Private, Bad };

Region locate(Worker* w, uintptr_t a, uint64_t size) {
  const AccessMap& m = w->d->access;
  if (m.in_buffer(a, size)) return Region::Buffer;
  // The calling thread's own stack: from this frame up to the top of its stack.
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t top = w->fiber_mode ? reinterpret_cast<uintptr_t>(fiber_stacks(*w)[w->current]->top()) : w->stack_top;
  if (within(a, size, here, top)) return Region::Private;
  const auto arena = reinterpret_cast<uintptr_t>(w->arena);
  if (within(a, size, arena, arena + w->tg_used)) return Region::Threadgroup;
  const auto self = reinterpret_cast<uintptr_t>(w);
  if (within(a, size, self, self + sizeof(Worker)) || within(a, size, w->threads) || within(a, size, w->snapshots))
    return Region::Private;
  if (m.in_allowed(a, size)) return Region::Private;
  return Region::Bad;
}

[[noreturn]] void report_out_of_bounds(Worker* w, uintptr_t a, uint64_t size, bool write, const void* pc) {
  const std::string at = source_line_of(pc);
  const std::string meant_for = SourceOrigins::buffer_at(at, w->d->spec->origins);
  std::string line = SourceOrigins::annotate(at, w->d->spec->origins);
  set_abort(w, ErrorKind::Dispatch,
            "kernel '" + kname(w->d->kernel) + "': " + w->d->access.describe(a, size, write, meant_for) + " by " +
                thread_desc(*w) +
                (line.empty() ? std::string() : " at " + line) +
                "; the access was stopped before it happened (memcheck; TRITON_MPS_MEMCHECK=0 turns it off)");
  abort_kernel(w);
}

// Counting on: device and threadgroup traffic of an access (valid or not: checked after).
void count_access(Worker* w, uintptr_t a, uint64_t size, bool write) {
  DispatchState& d = *w->d;
  DispatchCounters& c = w->counters;
  uint32_t position = 0;
  uintptr_t base = 0;
  if (d.access.locate(a, size, position, base)) {
    (write ? c.device_bytes_written : c.device_bytes_read) += size;
    ++(write ? c.device_stores : c.device_loads);
    if (c.buffers.size() <= position) c.buffers.resize(d.access.buffer_count());
    (write ? c.buffers[position].written : c.buffers[position].read) += size;
    (write ? d.written_bytes : d.read_bytes)[position].mark(a - base, size);
    return;
  }
  const auto arena = reinterpret_cast<uintptr_t>(w->arena);
  if (a >= arena && a < arena + kMaxThreadgroupMemory) (write ? c.threadgroup_bytes_written : c.threadgroup_bytes_read) += size;
}

// Memcheck (see memcheck.h). The common case, an access inside a bound buffer, is the first test.
void rt_check_access(const void* addr, tmps_u64 size, tmps_u32 is_write, const void* pc) {
  Worker* w = tls_worker;
  if (!w || !w->d) return;  // kernel code run outside a dispatch (a test calling it directly)
  if (cancelled(*w->d)) stop_kernel(w);  // memcheck builds: every access is a point to stop at
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (w->d->counting) count_access(w, a, size, is_write != 0);
  const Region r = locate(w, a, size);
  if (r == Region::Bad) report_out_of_bounds(w, a, size, is_write != 0, pc);
  const uint32_t checks = w->d->checks;
  if (!checks || r == Region::Private) return;
  if (r == Region::Threadgroup && (checks & TMPS_CHECK_RACE))
    check_threadgroup(w, a - reinterpret_cast<uintptr_t>(w->arena), size, is_write != 0, pc);
  if (checks & TMPS_CHECK_INTERLEAVE) maybe_yield(w);
}

void rt_atomic_access(const void* addr, tmps_u64 size, const void* pc) {
  Worker* w = tls_worker;
  if (!w || !w->d) return;
  if (cancelled(*w->d)) stop_kernel(w);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (w->d->counting) count_access(w, a, size, true);
  const Region r = locate(w, a, size);
  if (r == Region::Bad) report_out_of_bounds(w, a, size, true, pc);
  const uint32_t checks = w->d->checks;
  if (!checks || r == Region::Private) return;
  if (r == Region::Threadgroup && (checks & TMPS_CHECK_RACE))
    check_threadgroup_atomic(w, a - reinterpret_cast<uintptr_t>(w->arena), size, pc);
  if (checks & TMPS_CHECK_INTERLEAVE) maybe_yield(w);
}

void rt_count_flops(tmps_u32 n) {
  Worker* w = require_worker("count_flops");
  if (w->d->counting) w->counters.scalar_flops += n;
}

const tmps_sim_runtime kRuntime = {
    TMPS_SIM_ABI_VERSION, rt_threadgroup_barrier, rt_simdgroup_barrier, rt_simd_exchange,
    rt_threadgroup_static, rt_fail, rt_current_thread, rt_check_access, rt_atomic_access,
    rt_count_flops,
};

}  // namespace

const tmps_sim_runtime* runtime() { return &kRuntime; }

}  // namespace tmps::sim
