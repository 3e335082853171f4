// C = A * B with 8x8 simdgroup_matrix tiles: each SIMD-group computes one 8x8 tile of C,
// walking K in steps of 8 with simdgroup_multiply_accumulate (float accumulators,
// half inputs).
//
// Bindings:  buffer(0) const device half* A    M x K, row-major
//            buffer(1) const device half* B    K x N, row-major
//            buffer(2) device float* C         M x N, row-major
//            buffer(3) constant uint3& dims    (M, N, K), each a multiple of 8
// Dispatch:  threadgroups of 32 threads (one SIMD-group), grid of (N/8, M/8) threadgroups.
// Expected:  C[i][j] = sum_k A[i][k] * B[k][j] (float accumulation; exact for small-integer
//            data, e.g. A[i][k] = (i + k) % 5 - 2, B[k][j] = (k * j) % 3).
#include <metal_stdlib>
using namespace metal;

kernel void simdgroup_matmul(const device half* A [[buffer(0)]],
                             const device half* B [[buffer(1)]],
                             device float* C [[buffer(2)]],
                             constant uint3& dims [[buffer(3)]],
                             uint2 tile [[threadgroup_position_in_grid]]) {
  const uint N = dims.y, K = dims.z;
  const uint row0 = tile.y * 8, col0 = tile.x * 8;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_half8x8 a;
    simdgroup_half8x8 b;
    simdgroup_load(a, A, K, ulong2(k, row0));
    simdgroup_load(b, B, N, ulong2(col0, k));
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C, N, ulong2(col0, row0));
}
