// Block sum reduction: simd_sum inside each SIMD-group, partial sums through threadgroup
// memory and a barrier, a second simd_sum over the partials.
//
// Bindings:  buffer(0) const device float* in   n floats
//            buffer(1) device float* out        one float per threadgroup
//            buffer(2) constant uint& n
// Dispatch:  1-D, 256 threads per threadgroup (any multiple of 32 up to 1024 works),
//            ceil(n / 256) threadgroups.
// Expected:  out[g] = sum of in[g*256 .. g*256+255] (indices >= n count as 0).
//            E.g. n = 1000, in[i] = i % 7  ->  out[0] = sum over i < 256 of (i % 7) = 759.
//            Compare with a tolerance for non-integer data (reduction order differs from Metal).
#include <metal_stdlib>
using namespace metal;

kernel void reduce_sum(const device float* in [[buffer(0)]],
                       device float* out [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]],
                       uint tg [[threadgroup_position_in_grid]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float v = gid < n ? in[gid] : 0.0f;
  float s = simd_sum(v);
  if (lane == 0) {
    partial[sg] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float t = lane < nsg ? partial[lane] : 0.0f;
    t = simd_sum(t);
    if (lane == 0) {
      out[tg] = t;
    }
  }
}
