"""Hand-written MSL kernels run on the simulator and checked against numpy in float64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

# The demo's kernel: simd_sum, threadgroup memory, a barrier, simd_sum again.
REDUCE_SIMD = (Path(__file__).resolve().parents[2] / "examples" / "block_sum.metal").read_text()

TREE_SUM = r"""
#include <metal_stdlib>
using namespace metal;

// Classic tree reduction in dynamic threadgroup memory: a barrier per halving step.
kernel void tree_sum(device const float* x [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     constant uint& n [[buffer(2)]],
                     threadgroup float* scratch [[threadgroup(0)]],
                     uint gid [[thread_position_in_grid]],
                     uint lid [[thread_position_in_threadgroup]],
                     uint tpg [[threads_per_threadgroup]],
                     uint tg [[threadgroup_position_in_grid]]) {
  scratch[lid] = gid < n ? x[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = tpg / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[tg] = scratch[0];
}
"""


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 4097])
@pytest.mark.parametrize("threads", [32, 256, 1024])
def test_block_sum_simd(sim, rng, n, threads):
    k = triton_mps.compile_msl(REDUCE_SIMD, "block_sum", sim)
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // threads)
    out = poisoned(groups, np.float32)
    k(x, out, n, grid=groups, threads=threads)
    sim.synchronize()
    padded = np.zeros(groups * threads, np.float64)
    padded[:n] = x
    ref = padded.reshape(groups, threads).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [64, 128, 512])
def test_tree_sum_dynamic_threadgroup_memory(sim, rng, threads):
    n = 3 * threads + 17
    k = triton_mps.compile_msl(TREE_SUM, "tree_sum", sim)
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // threads)
    out = poisoned(groups, np.float32)
    k(x, out, n, grid=groups, threads=threads, threadgroup_memory=[(0, threads * 4)])
    sim.synchronize()
    padded = np.zeros(groups * threads, np.float64)
    padded[:n] = x
    np.testing.assert_allclose(out, padded.reshape(groups, threads).sum(axis=1), rtol=1e-5, atol=1e-5)


SOFTMAX_HALF4 = r"""
#include <metal_stdlib>
using namespace metal;

// Row softmax over half4 vectors: one threadgroup per row, float accumulation, the row max and
// sum combined with SIMD-group reductions and threadgroup memory.
kernel void softmax_h4(device const half4* x [[buffer(0)]],
                       device half4* y [[buffer(1)]],
                       constant uint& vecs_per_row [[buffer(2)]],
                       uint row [[threadgroup_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]],
                       uint tpg [[threads_per_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float red[32];
  device const half4* xr = x + row * vecs_per_row;
  device half4* yr = y + row * vecs_per_row;

  float m = -INFINITY;
  for (uint i = lid; i < vecs_per_row; i += tpg) {
    float4 v = float4(xr[i]);
    m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
  }
  m = simd_max(m);
  if (lane == 0) red[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = red[0];
  for (uint i = 1; i < nsg; ++i) m = max(m, red[i]);
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float s = 0.0f;
  for (uint i = lid; i < vecs_per_row; i += tpg) {
    float4 e = exp(float4(xr[i]) - m);
    s += e.x + e.y + e.z + e.w;
  }
  s = simd_sum(s);
  if (lane == 0) red[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = 0.0f;
  for (uint i = 0; i < nsg; ++i) s += red[i];

  for (uint i = lid; i < vecs_per_row; i += tpg) {
    yr[i] = half4(exp(float4(xr[i]) - m) / s);
  }
}
"""


@pytest.mark.parametrize("rows,cols", [(1, 4), (3, 100), (7, 1028), (2, 4096)])
@pytest.mark.parametrize("threads", [32, 128])
def test_softmax_half4(sim, rng, rows, cols, threads):
    k = triton_mps.compile_msl(SOFTMAX_HALF4, "softmax_h4", sim)
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float16)
    y = poisoned((rows, cols), np.float16)
    k(x, y, cols // 4, grid=rows, threads=threads)
    sim.synchronize()
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=1e-4)


MATMUL_8x8 = r"""
#include <metal_stdlib>
using namespace metal;

// C = A @ B with one SIMD-group per 8x8 tile of C: simdgroup_matrix loads and
// multiply-accumulate over K in steps of 8, accumulator kept in the matrix registers.
template <typename T>
void mm_tile(device const T* A, device const T* B, device float* C, uint M, uint N, uint K, uint2 tile) {
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_matrix<T, 8, 8> a;
    simdgroup_matrix<T, 8, 8> b;
    simdgroup_load(a, A, K, ulong2(k, tile.y * 8));
    simdgroup_load(b, B, N, ulong2(tile.x * 8, k));
    simdgroup_float8x8 af;
    simdgroup_float8x8 bf;
    // Mixed precision: widen the operands' elements, then multiply in float.
    for (uint i = 0; i < 2; ++i) {
      af.thread_elements()[i] = float(a.thread_elements()[i]);
      bf.thread_elements()[i] = float(b.thread_elements()[i]);
    }
    simdgroup_multiply_accumulate(acc, af, bf, acc);
  }
  simdgroup_store(acc, C, N, ulong2(tile.x * 8, tile.y * 8));
}

kernel void mm_f32(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                   device float* C [[buffer(2)]], constant uint3& dims [[buffer(3)]],
                   uint2 tile [[threadgroup_position_in_grid]]) {
  mm_tile<float>(A, B, C, dims.x, dims.y, dims.z, tile);
}

kernel void mm_f16(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                   device float* C [[buffer(2)]], constant uint3& dims [[buffer(3)]],
                   uint2 tile [[threadgroup_position_in_grid]]) {
  mm_tile<half>(A, B, C, dims.x, dims.y, dims.z, tile);
}
"""


@pytest.mark.parametrize("dtype,entry,tol", [(np.float32, "mm_f32", 1e-4), (np.float16, "mm_f16", 1e-2)])
@pytest.mark.parametrize("m,n,k", [(8, 8, 8), (16, 24, 40), (64, 32, 128)])
def test_simdgroup_matrix_matmul(sim, rng, dtype, entry, tol, m, n, k):
    kern = triton_mps.compile_msl(MATMUL_8x8, entry, sim)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = poisoned((m, n), np.float32)
    kern(a, b, c, [m, n, k], grid=(n // 8, m // 8), threads=32)
    sim.synchronize()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol)


ATOMICS = r"""
#include <metal_stdlib>
using namespace metal;

kernel void atomics(device const int* x [[buffer(0)]],
                    device atomic_uint* hist [[buffer(1)]],
                    device atomic_float* fsum [[buffer(2)]],
                    device atomic_int* imax [[buffer(3)]],
                    device atomic_uint* per_group [[buffer(4)]],
                    device atomic_uint* first_writer [[buffer(5)]],
                    device atomic_uint* cas_wins [[buffer(6)]],
                    device atomic_int* bits [[buffer(7)]],
                    constant uint& n [[buffer(8)]],
                    uint gid [[thread_position_in_grid]],
                    uint lid [[thread_index_in_threadgroup]],
                    uint tg [[threadgroup_position_in_grid]]) {
  threadgroup atomic_uint local_count;
  if (lid == 0) atomic_store_explicit(&local_count, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (gid < n) {
    int v = x[gid];
    atomic_fetch_add_explicit(&hist[uint(v) & 15u], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(fsum, float(v) * 0.5f, memory_order_relaxed);
    atomic_fetch_max_explicit(imax, v, memory_order_relaxed);
    atomic_fetch_add_explicit(&local_count, 1u, memory_order_relaxed);
    atomic_fetch_or_explicit(&bits[0], 1 << (v & 31), memory_order_relaxed);
    atomic_fetch_and_explicit(&bits[1], ~(1 << (v & 31)), memory_order_relaxed);
    atomic_fetch_xor_explicit(&bits[2], v, memory_order_relaxed);
    uint expected = 0u;
    if (atomic_compare_exchange_weak_explicit(first_writer, &expected, gid + 1u,
                                              memory_order_relaxed, memory_order_relaxed)) {
      atomic_fetch_add_explicit(cas_wins, 1u, memory_order_relaxed);
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    atomic_store_explicit(&per_group[tg], atomic_load_explicit(&local_count, memory_order_relaxed),
                          memory_order_relaxed);
  }
}
"""


@pytest.mark.parametrize("n,threads", [(1, 32), (1000, 128), (5000, 256)])
def test_atomics(sim, rng, n, threads):
    k = triton_mps.compile_msl(ATOMICS, "atomics", sim)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    groups = -(-n // threads)
    hist = np.zeros(16, np.uint32)
    fsum = np.zeros(1, np.float32)
    imax = np.full(1, np.iinfo(np.int32).min, np.int32)
    per_group = poisoned(groups, np.uint32)
    first = np.zeros(1, np.uint32)
    wins = np.zeros(1, np.uint32)
    bits = np.array([0, -1, 0], np.int32)
    k(x, hist, fsum, imax, per_group, first, wins, bits, n, grid=groups, threads=threads)
    sim.synchronize()
    np.testing.assert_array_equal(hist, np.bincount(x.astype(np.uint32) & 15, minlength=16))
    np.testing.assert_allclose(fsum[0], (x.astype(np.float64) * 0.5).sum(), rtol=1e-5, atol=1e-2)
    assert imax[0] == x.max()
    expected_groups = np.full(groups, threads)
    expected_groups[-1] = n - threads * (groups - 1)
    np.testing.assert_array_equal(per_group, expected_groups)
    assert 1 <= first[0] <= n and wins[0] == 1
    mask = np.bitwise_or.reduce((np.int64(1) << (x & 31)).astype(np.uint32))
    assert np.uint32(bits[0]) == mask
    assert np.uint32(bits[1]) == np.uint32(~mask)
    assert bits[2] == np.bitwise_xor.reduce(x)


BFLOAT = r"""
#include <metal_stdlib>
using namespace metal;

// bfloat arithmetic: every operation rounds to bfloat (round to nearest even).
kernel void bf16_fma(device const bfloat* a [[buffer(0)]], device const bfloat* b [[buffer(1)]],
                     device bfloat* y [[buffer(2)]], device float* widened [[buffer(3)]],
                     constant float& c [[buffer(4)]], constant uint& n [[buffer(5)]],
                     device bfloat* y_expr [[buffer(6)]],
                     uint i [[thread_position_in_grid]]) {
  if (i >= n) return;
  bfloat p = a[i] * b[i];
  bfloat r = p + bfloat(c);
  y[i] = r;
  widened[i] = float(r);
  y_expr[i] = a[i] * b[i] + bfloat(c);  // same, in one expression: no excess precision
}
"""


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even), returned as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("n", [1, 100, 1031])
def test_bfloat_arithmetic(sim, rng, n):
    k = triton_mps.compile_msl(BFLOAT, "bf16_fma", sim)
    a32 = _bf16_round(rng.standard_normal(n).astype(np.float32) * 10)
    b32 = _bf16_round(rng.standard_normal(n).astype(np.float32))
    a = (a32.view(np.uint32) >> 16).astype(np.uint16)
    b = (b32.view(np.uint32) >> 16).astype(np.uint16)
    c = float(rng.standard_normal())
    y = poisoned(n, np.uint16)
    wide = poisoned(n, np.float32)
    threads = 64
    y_expr = poisoned(n, np.uint16)
    k(a, b, y, wide, c, n, y_expr, grid=-(-n // threads), threads=threads)
    sim.synchronize()
    p = _bf16_round(a32 * b32)  # exact product of two bfloats fits in float32
    ref = _bf16_round((p.astype(np.float64) + _bf16_round(np.float32([c]))[0]).astype(np.float32))
    got = (y.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(wide, ref)
    np.testing.assert_array_equal((y_expr.astype(np.uint32) << 16).view(np.float32), ref)


BFLOAT_CASTS = r"""
#include <metal_stdlib>
using namespace metal;

// `(bfloat)(x)` and `(bfloat)name` are translated to the shim's inline conversion; `bfloat(x)` and an implicit
// conversion stay the compiler's (a compiler-rt call on targets without BF16 instructions).
kernel void bf16_casts(device const uint* bits [[buffer(0)]], device ushort* cast [[buffer(1)]],
                       device ushort* call [[buffer(2)]], device ushort* implicit [[buffer(3)]],
                       device ushort* from_int [[buffer(4)]], device ushort* named [[buffer(5)]],
                       constant uint& n [[buffer(6)]],
                       uint i [[thread_position_in_grid]]) {
  if (i >= n) return;
  const float f = as_type<float>(bits[i]);
  cast[i] = as_type<ushort>((bfloat)(f * 1.0f));
  call[i] = as_type<ushort>(bfloat(f));
  bfloat b = f;
  implicit[i] = as_type<ushort>(b);
  from_int[i] = as_type<ushort>((bfloat)((int)(bits[i] >> 8u)));  // the compiler's conversion
  named[i] = as_type<ushort>((bfloat)f);
}
"""


def _bf16_bits(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns -> bfloat16 bit patterns: nearest even; a NaN stays a quiet NaN."""
    b = bits.astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    return np.where(nan, (b >> 16) | 0x40, rounded).astype(np.uint16)


def test_bfloat_casts_round_like_the_compiler(sim, rng):
    """The translated cast and the compiler's conversion give the same bits on every kind of
    float: random bit patterns (NaN payloads, subnormals, infinities) and exact ties."""
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF, 0x00000001,
                        0x007FFFFF, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F7F8000, 0x33800000], dtype=np.uint32)
    ties = (rng.integers(0, 1 << 16, 4096, dtype=np.uint32) << 16) | 0x8000
    bits = np.concatenate([special, ties, rng.integers(0, 1 << 32, 60000, dtype=np.uint32)])
    n = bits.size
    k = triton_mps.compile_msl(BFLOAT_CASTS, "bf16_casts", sim)
    outs = [poisoned(n, np.uint16) for _ in range(5)]
    k(bits, *outs, n, grid=-(-n // 128), threads=128)
    sim.synchronize()
    want = _bf16_bits(bits)
    for got in (*outs[:3], outs[4]):
        np.testing.assert_array_equal(got, want)
    small = (bits >> 8).astype(np.int32).astype(np.float32)  # below 2^24: exact in float
    np.testing.assert_array_equal(outs[3], _bf16_bits(small.view(np.uint32)))


SCAN_SHUFFLE = r"""
#include <metal_stdlib>
using namespace metal;

kernel void simd_ops(device const int* x [[buffer(0)]], device int* incl [[buffer(1)]],
                     device int* excl [[buffer(2)]], device int* xor1 [[buffer(3)]],
                     device int* down [[buffer(4)]], device int* bcast [[buffer(5)]],
                     uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  int v = x[gid];
  incl[gid] = simd_prefix_inclusive_sum(v);
  excl[gid] = simd_prefix_exclusive_sum(v);
  xor1[gid] = simd_shuffle_xor(v, 1u);
  down[gid] = simd_shuffle_down(v, 3u);
  bcast[gid] = simd_broadcast(v, 5u);
}
"""


def test_simd_scan_and_shuffles(sim, rng):
    n = 128
    k = triton_mps.compile_msl(SCAN_SHUFFLE, "simd_ops", sim)
    x = rng.integers(-50, 50, n).astype(np.int32)
    outs = [poisoned(n, np.int32) for _ in range(5)]
    k(x, *outs, grid=n // 64, threads=64)
    sim.synchronize()
    incl, excl, xor1, down, bcast = outs
    g = x.reshape(-1, 32)
    np.testing.assert_array_equal(incl.reshape(-1, 32), np.cumsum(g, axis=1))
    np.testing.assert_array_equal(excl.reshape(-1, 32), np.cumsum(g, axis=1) - g)
    lanes = np.arange(32)
    np.testing.assert_array_equal(xor1.reshape(-1, 32), g[:, lanes ^ 1])
    # shuffle_down past the end keeps the lane's own value (Metal leaves it undefined).
    exp_down = np.where(lanes + 3 < 32, g[:, np.minimum(lanes + 3, 31)], g)
    np.testing.assert_array_equal(down.reshape(-1, 32)[:, :29], exp_down[:, :29])
    np.testing.assert_array_equal(bcast.reshape(-1, 32), np.repeat(g[:, 5:6], 32, axis=1))


def test_many_launches_batched_then_synchronized(sim, rng):
    """Launches are encoded without waiting; synchronize() makes all results visible."""
    k = triton_mps.compile_msl(REDUCE_SIMD, "block_sum", sim)
    xs = [rng.standard_normal(300).astype(np.float32) for _ in range(10)]
    outs = [poisoned(2, np.float32) for _ in xs]
    for x, o in zip(xs, outs, strict=True):
        k(x, o, 300, grid=2, threads=256)
    sim.synchronize()
    assert sim.pending == 0
    for x, o in zip(xs, outs, strict=True):
        ref = np.array([x[:256].astype(np.float64).sum(), x[256:].astype(np.float64).sum()])
        np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


def test_timed_dispatch_reports_duration(sim, rng):
    k = triton_mps.compile_msl(REDUCE_SIMD, "block_sum", sim)
    x = rng.standard_normal(4096).astype(np.float32)
    out = poisoned(16, np.float32)
    t = k(x, out, 4096, grid=16, threads=256, timed=True)
    assert t is not None
    sim.synchronize()
    assert t.ready and t.end_ns >= t.start_ns > 0 and t.error == ""
