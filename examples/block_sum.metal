// Two-level reduction: simd_sum inside SIMD-groups, then across them through threadgroup
// memory behind a barrier. One partial sum per threadgroup. Used by examples/demo.py and the tests.
#include <metal_stdlib>
using namespace metal;

kernel void block_sum(device const float* x [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]],
                      uint gid [[thread_position_in_grid]],
                      uint tg [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float v = gid < n ? x[gid] : 0.0f;
  v = simd_sum(v);
  if (lane == 0) partial[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float w = lane < nsg ? partial[lane] : 0.0f;
    w = simd_sum(w);
    if (lane == 0) out[tg] = w;
  }
}
