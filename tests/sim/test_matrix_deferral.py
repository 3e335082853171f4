"""simdgroup_matrix multiplies on the simulator are deferred and completed per SIMD-group when
their product is read (csrc/sim/include/tmps_metal_matrix.h). Through the real runtime: results
equal multiplying one product at a time (exact bits, chains longer than a chain holds, a half
accumulator rounded per step), lanes that exited or diverged are reported at the multiply's MSL
line when its product is read, and the device stays usable after such an error."""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

CHAIN = r"""
#include <metal_stdlib>
using namespace metal;
// acc = sum over k of A_k @ B_k (K / 8 steps), acc's type T, from C.
template <typename T>
void chain(device const half* A, device const half* B, device const T* C, device T* D, uint steps) {
  simdgroup_matrix<T, 8, 8> acc;
  simdgroup_load(acc, C);
  for (uint k = 0; k < steps; ++k) {
    simdgroup_half8x8 a;
    simdgroup_half8x8 b;
    simdgroup_load(a, A + 64 * k);
    simdgroup_load(b, B + 64 * k);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, D);
}
kernel void chain_f32(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                      device const float* C [[buffer(2)]], device float* D [[buffer(3)]],
                      constant uint& steps [[buffer(4)]]) {
  chain<float>(A, B, C, D, steps);
}
kernel void chain_f16(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                      device const half* C [[buffer(2)]], device half* D [[buffer(3)]],
                      constant uint& steps [[buffer(4)]]) {
  chain<half>(A, B, C, D, steps);
}
"""


def _one_at_a_time(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype) -> np.ndarray:
    """The shim's multiply, one product at a time: sums over i = 0..7 from 0 in float32 (no
    fused multiply-add), + c, rounded once to the accumulator's type."""
    acc = c.astype(dtype)
    for k in range(a.shape[0]):
        s = np.zeros((8, 8), np.float32)
        for i in range(8):  # float32 products and sums, each rounded: no fusion
            s = s + a[k][:, i:i + 1].astype(np.float32) * b[k][i:i + 1, :].astype(np.float32)
        acc = (s + acc.astype(np.float32)).astype(dtype)
    return acc


@pytest.mark.parametrize("entry,dtype", [("chain_f32", np.float32), ("chain_f16", np.float16)])
@pytest.mark.parametrize("steps", [1, 16, 17, 50])  # 16: a full chain; 17 and 50: completed on the way
def test_deferred_chains_equal_one_product_at_a_time(sim, rng, entry, dtype, steps):
    kern = triton_mps.compile_msl(CHAIN, entry, sim)
    a = (rng.standard_normal((steps, 8, 8)) * 2).astype(np.float16)
    b = (rng.standard_normal((steps, 8, 8)) * 2).astype(np.float16)
    c = rng.standard_normal((8, 8)).astype(dtype)
    d = poisoned((8, 8), dtype)
    kern(a, b, c, d, steps, grid=(1,), threads=32)
    sim.synchronize()
    want = _one_at_a_time(a, b, c, dtype)
    np.testing.assert_array_equal(d.view(np.uint16 if dtype == np.float16 else np.uint32),
                                  want.view(np.uint16 if dtype == np.float16 else np.uint32))


PARTIAL = r"""
#include <metal_stdlib>
using namespace metal;
kernel void partial(device const float* A [[buffer(0)]], device float* D [[buffer(1)]],
                    constant uint& mode [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a;
  simdgroup_float8x8 d;
  simdgroup_load(a, A);
  if (mode == 0 && lane >= 16) return;
  if (mode == 1 && lane >= 16) {
    simdgroup_multiply(d, a, a);
  } else {
    simdgroup_multiply(d, a, a);
  }
  simdgroup_store(d, D);
}
"""
UPPER_LINE, LOWER_LINE = 11, 13  # MSL lines of the two multiplies (lanes 16-31 in mode 1; the rest)


@pytest.mark.parametrize("mode,what", [(0, "lanes exited"), (1, "lanes diverged")])
def test_partial_or_diverged_simdgroup_is_reported_at_the_multiply(sim, rng, mode, what):
    kern = triton_mps.compile_msl(PARTIAL, "partial", sim)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    d = poisoned((8, 8), np.float32)
    with pytest.raises(triton_mps.DispatchError) as info:
        kern(a, d, mode, grid=(1,), threads=32)
        sim.synchronize()
    message = str(info.value)
    assert "needs all 32 lanes" in message, message
    assert f"line {LOWER_LINE}" in message or f"line {UPPER_LINE}" in message, message
    # The device stays usable: the same kernel with every lane multiplying.
    kern(a, d, 2, grid=(1,), threads=32)
    sim.synchronize()
    np.testing.assert_allclose(d, a.astype(np.float64) @ a.astype(np.float64), rtol=1e-5, atol=1e-5)
