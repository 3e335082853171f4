// Row softmax on half data, 4 elements per load (half4), reductions in float:
// simd_max / simd_sum per SIMD-group, combined across SIMD-groups through threadgroup memory.
//
// Bindings:  buffer(0) const device half4* x   rows * cols/4 half4 (row-major, cols % 4 == 0)
//            buffer(1) device half4* y         same shape
//            buffer(2) constant uint& cols
// Dispatch:  1-D, one threadgroup per row, 128 threads per threadgroup (multiple of 32).
// Expected:  y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r), rounded to half;
//            every row of y sums to 1 within ~1e-3. E.g. cols = 8, x row = {0,1,2,3,4,5,6,7}
//            -> y row ~ {0.000577, 0.00157, 0.00426, 0.0116, 0.0315, 0.0858, 0.233, 0.634}.
#include <metal_stdlib>
using namespace metal;

kernel void softmax_half4(const device half4* x [[buffer(0)]],
                          device half4* y [[buffer(1)]],
                          constant uint& cols [[buffer(2)]],
                          uint row [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]],
                          uint ntid [[threads_per_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]],
                          uint sg [[simdgroup_index_in_threadgroup]],
                          uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[32];
  const uint n4 = cols / 4;
  const device half4* xr = x + row * n4;
  device half4* yr = y + row * n4;

  float m = -INFINITY;
  for (uint i = tid; i < n4; i += ntid) {
    float4 v = float4(xr[i]);
    m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
  }
  m = simd_max(m);
  if (lane == 0) scratch[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = lane < nsg ? scratch[lane] : -INFINITY;
  m = simd_max(m);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone has read scratch

  float s = 0.0f;
  for (uint i = tid; i < n4; i += ntid) {
    float4 e = exp(float4(xr[i]) - m);
    s += e.x + e.y + e.z + e.w;
  }
  s = simd_sum(s);
  if (lane == 0) scratch[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = lane < nsg ? scratch[lane] : 0.0f;
  s = simd_sum(s);

  const float inv = 1.0f / s;
  for (uint i = tid; i < n4; i += ntid) {
    yr[i] = half4(exp(float4(xr[i]) - m) * inv);
  }
}
