// Runs one dispatch of a simulator kernel over a grid of threadgroups.
//
// Threadgroups are spread over worker threads; a worker runs one threadgroup at a time with
// one fiber per GPU thread, resumed from the last lane to the first (deterministic). Fibers block in the
// runtime services (barriers, SIMD-group collectives) and the worker releases them once the
// whole threadgroup / SIMD-group has arrived. Kernels that never synchronise
// (needs_fibers == 0) run as a plain loop on the worker's own stack.
//
// The scheduler knows nothing about the compiler: it takes a tmps_sim_kernel table entry and
// raw pointers, so tests can hand it kernels written directly in C++ against the ABI.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "include/tmps_sim_abi.h"
#include "metal_limits.h"

namespace tmps::sim {

class SourceOrigins;  // memcheck.h

// The runtime services table every kernel library's `tmps_sim_rt` must point to.
const tmps_sim_runtime* runtime();

// Metal's limits (metal_limits.h), as the simulator enforces them.
constexpr uint32_t kMaxThreadsPerThreadgroup = limits::kMaxThreadsPerThreadgroup;
constexpr uint64_t kMaxThreadgroupMemory = limits::kMaxThreadgroupMemory;
static_assert(TMPS_SIM_MAX_BUFFERS == limits::kMaxBufferBindings && TMPS_SIM_SIMD_WIDTH == limits::kSimdWidth,
              "the kernel ABI (tmps_sim_abi.h, plain C for kernels) states Metal's limits again");

struct LaunchSpec {
  const tmps_sim_kernel* kernel = nullptr;
  std::array<uint32_t, 3> threadgroups{1, 1, 1};
  std::array<uint32_t, 3> threads_per_group{1, 1, 1};
  std::array<void*, TMPS_SIM_MAX_BUFFERS> buffers{};         // base + offset, nullptr if unbound
  std::array<uint64_t, TMPS_SIM_MAX_BUFFERS> buffer_sizes{};  // usable bytes
  // Where each bound region starts (the buffer's first byte, at or below `buffers[i]`): a kernel
  // may address any byte of the allocation, also below its pointer (views with negative strides,
  // a tensor view read at index -1). nullptr: the region starts at `buffers[i]`.
  std::array<const void*, TMPS_SIM_MAX_BUFFERS> buffer_starts{};
  std::array<uint32_t, TMPS_SIM_MAX_THREADGROUP_BINDINGS> threadgroup_lengths{};  // [[threadgroup(n)]] bytes
  // Memcheck builds: the library's `tmps_sim_mc`, pointed at this dispatch's table while it
  // runs. The caller runs one dispatch per library at a time. nullptr: no memcheck.
  const tmps_sim_memcheck** memcheck_slot = nullptr;
  // The kernel's Triton source lines, for diagnostics ("at line 46 (kernel.py:12)"); may be null.
  const SourceOrigins* origins = nullptr;
  // The threadgroups to run, by linear index: [group_begin, group_end), group_end 0 meaning the
  // last. SimDevice runs a dispatch in two parts when it switches builds partway (tiering).
  uint64_t group_begin = 0, group_end = 0;
};

// What one dispatch did, counted by the simulator when counting is on (set_counting, or
// $TRITON_MPS_SIM_COUNTERS=1). Device traffic is seen through memcheck's instrumentation, so
// it is counted only for memcheck builds (the default); with counting on, every access takes
// memcheck's slow path (a call into the runtime), several times slower.
struct DispatchCounters {
  bool valid = false;           // a dispatch ran with counting on
  bool memory_counted = false;  // the kernel was built with memcheck: the byte counts are real
  uint64_t threadgroups = 0, threads_per_threadgroup = 0;
  uint64_t device_bytes_read = 0, device_bytes_written = 0;
  // Distinct bytes of the bound buffers read / written (exact: a bitmap per buffer).
  uint64_t device_distinct_read = 0, device_distinct_written = 0;
  uint64_t device_loads = 0, device_stores = 0;  // accesses (instrumented loads and stores)
  uint64_t threadgroup_bytes_read = 0, threadgroup_bytes_written = 0;
  uint64_t barriers = 0;            // threadgroup barriers, once per threadgroup that passed one
  uint64_t simd_collectives = 0;    // SIMD-group functions (shuffles, reductions...), once per SIMD-group
  uint64_t simdgroup_barriers = 0;  // simdgroup_barrier(), once per SIMD-group
  uint64_t simdgroup_matrix_ops = 0;    // 8x8x8 simdgroup_matrix multiply(-accumulate)s
  uint64_t simdgroup_matrix_flops = 0;  // 2 * 8 * 8 * 8 per op
  // Exchanges that completed deferred multiplies (tmps_metal_matrix.h), once per SIMD-group:
  // a SIMD-group's multiplies into one matrix are completed together when it is read.
  uint64_t simdgroup_matrix_exchanges = 0;
  // Scalar floating-point add/sub/mul/div (1 each) and fma (2) per element, as the compiler's
  // TMPS_FLOPS marks them; counted by a kernel's counting build (SimDevice), else 0.
  uint64_t scalar_flops = 0;
  struct Buffer {
    uint32_t index = 0;  // [[buffer(index)]]
    uint64_t bytes = 0;  // bound length
    uint64_t read = 0, written = 0, distinct_read = 0, distinct_written = 0;
  };
  std::vector<Buffer> buffers;  // per bound buffer (scalar arguments are buffers too)
};
void set_counting(bool on);
bool counting();
// The counters of the last dispatch that ran with counting on, in this process.
DispatchCounters last_dispatch_counters();

struct Worker;
class Watchdog;

class Scheduler {
 public:
  // workers == 0: $TRITON_MPS_SIM_THREADS, else the CPUs this process may use (affinity).
  // stack_bytes == 0: $TRITON_MPS_SIM_STACK_KB, else 256 KiB.
  explicit Scheduler(unsigned workers = 0, size_t stack_bytes = 0);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Run the whole dispatch; returns when every threadgroup finished.
  // Throws LimitExceeded (threadgroup size / memory), DispatchError (fail(), divergent
  // barrier, deadlock, invalid memory access, stack overflow, longer than
  // $TRITON_MPS_TIMEOUT seconds of CPU time in one worker (default 300, 0: no limit)),
  // Interrupted (Ctrl-C). A running
  // kernel notices a stop request at its next barrier, SIMD-group function or (memcheck
  // builds) memory access, and otherwise at its threadgroup's end. Reusable after an error.
  // Calls on one Scheduler are serialised.
  // Returns the dispatch's counters when counting was on for it (`valid`), else empty ones.
  DispatchCounters run(const LaunchSpec& spec);

  unsigned workers() const { return num_workers_; }

 private:
  unsigned num_workers_;
  size_t stack_bytes_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> workers_;  // kept across dispatches: stacks are reused
  // Every worker's threadgroup memory, consecutive (Worker::arena points into it).
  std::unique_ptr<unsigned char, void (*)(void*)> arenas_{nullptr, std::free};
  std::unique_ptr<Watchdog> watchdog_;             // started at the first dispatch
};

}  // namespace tmps::sim
