// Atomics on device and threadgroup memory: a 16-bin histogram counted in threadgroup
// atomic_uint bins and flushed to device bins, a device atomic_float sum, device atomic_int
// min/max, and a compare-exchange loop that counts odd values.
//
// Bindings:  buffer(0) const device int* values        n ints
//            buffer(1) device atomic_uint* bins        16 counters, zero-initialised
//            buffer(2) device atomic_float* total      1 float, zero-initialised
//            buffer(3) device atomic_int* minmax       [0] = INT_MAX, [1] = INT_MIN initially
//            buffer(4) device atomic_int* odd_count    1 int, zero-initialised
//            buffer(5) constant uint& n
// Dispatch:  1-D, 64 threads per threadgroup, ceil(n / 64) threadgroups.
// Expected:  bins[b] = #{i : values[i] & 15 == b}; total = sum of values (exact for small ints);
//            minmax = {min(values), max(values)}; odd_count = #{i : values[i] odd}.
//            E.g. n = 1000, values[i] = i * 7 % 101 - 50.
#include <metal_stdlib>
using namespace metal;

kernel void atomics(const device int* values [[buffer(0)]],
                    device atomic_uint* bins [[buffer(1)]],
                    device atomic_float* total [[buffer(2)]],
                    device atomic_int* minmax [[buffer(3)]],
                    device atomic_int* odd_count [[buffer(4)]],
                    constant uint& n [[buffer(5)]],
                    uint gid [[thread_position_in_grid]],
                    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint local_bins[16];
  if (tid < 16) {
    atomic_store_explicit(&local_bins[tid], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  if (gid < n) {
    const int v = values[gid];
    atomic_fetch_add_explicit(&local_bins[v & 15], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(total, (float)v, memory_order_relaxed);
    atomic_fetch_min_explicit(&minmax[0], v, memory_order_relaxed);
    atomic_fetch_max_explicit(&minmax[1], v, memory_order_relaxed);
    if (v & 1) {
      int seen = atomic_load_explicit(odd_count, memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(odd_count, &seen, seen + 1,
                                                    memory_order_relaxed, memory_order_relaxed)) {
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  if (tid < 16) {
    uint c = atomic_load_explicit(&local_bins[tid], memory_order_relaxed);
    if (c != 0) {
      atomic_fetch_add_explicit(&bins[tid], c, memory_order_relaxed);
    }
  }
}
