"""A SIMD-group runs as one call (issue 29, sim/simd_collapse.h): the same bits as one fiber per
thread, the same reports, and a counted refusal (fibers then) for what the rewrite cannot take.

TRITON_MPS_SIM_COLLAPSE=0 is read at each dispatch: the same pipeline runs both ways here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import triton_mps
from tmps_testing import collapsed_and_fibers
from triton_mps import _core

# Uniform loops around shuffles, prefix sums, a broadcast, a ballot, quad functions, lane-varying
# branches without SIMD-group functions in them and a cross-SIMD-group exchange through
# threadgroup memory between barriers.
COLLAPSIBLE = r"""
#include <metal_stdlib>
using namespace metal;
kernel void collapsible(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        constant uint& rounds [[buffer(2)]],
                        uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float tile[4];
  float v = x[gid];
  float m = v;
  for (ushort s = 1; s < 32; s <<= 1) m = max(m, simd_shuffle_xor(m, s));
  float acc = 0.0f;
  for (uint r = 0; r < rounds; ++r) {
    float t = v * (float)(r + 1);
    if (lane % 3 == 1) t = -t;
    float scan = simd_prefix_inclusive_sum(t);
    acc += scan;
  }
  float first = simd_broadcast(v, (ushort)7);
  simd_vote vote = simd_ballot(v > 0.0f);
  uint bits = (uint)(ulong)vote;
  float q = quad_sum(v);
  if (lane == 0) tile[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float other = tile[(sg + 1) % 4];
  out[gid * 6 + 0] = m;
  out[gid * 6 + 1] = acc;
  out[gid * 6 + 2] = first;
  out[gid * 6 + 3] = as_type<float>(bits);
  out[gid * 6 + 4] = q;
  out[gid * 6 + 5] = other;
}
"""

# Two SIMD-group functions in one expression: refused (counted), runs on fibers.
REFUSED = r"""
#include <metal_stdlib>
using namespace metal;
kernel void refused(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  out[gid] = lane % 3 == 0 ? simd_sum(v) : simd_max(v * 2.0f);
}
"""


def _outcome_delta(before: dict, after: dict) -> dict:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}


# 100 threads: a partial last SIMD-group, which the scheduler runs on fibers (no lane mask in
# collapsed code): the values are checked all the same.
@pytest.mark.parametrize("threads", [128, 100])
def test_collapsed_msl_kernel_gives_the_bits_of_fibers(sim, rng, monkeypatch, threads):
    groups, rounds = 5, 3
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(COLLAPSIBLE + f"// {threads} threads\n", "collapsible", sim)  # a new build
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {"collapsed": 1}
    x = rng.standard_normal(threads * groups).astype(np.float32)

    def run():
        out = np.full(x.size * 6, np.nan, np.float32)
        k(x, out, np.uint32(rounds), grid=groups, threads=threads)
        sim.synchronize()
        return out.reshape(-1, 6)

    collapsed, fibers = collapsed_and_fibers(monkeypatch, run)
    np.testing.assert_array_equal(collapsed.view(np.uint32), fibers.view(np.uint32))
    # and right: the max over each SIMD-group's present lanes, the broadcast of lane 7
    for g in range(groups):
        for sg in range(4):
            lo = g * threads + sg * 32
            hi = min(lo + 32, (g + 1) * threads)
            np.testing.assert_array_equal(collapsed[lo:hi, 0], x[lo:hi].max())
            if lo + 7 < hi:
                np.testing.assert_array_equal(collapsed[lo:hi, 2], x[lo + 7])
            bits = sum(1 << i for i in range(hi - lo) if x[lo + i] > 0)
            assert (collapsed[lo:hi, 3].view(np.uint32) == bits).all()


def test_refused_kernel_is_counted_and_runs_on_fibers(sim, rng, monkeypatch):
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(REFUSED, "refused", sim)
    delta = _outcome_delta(before, _core.sim_collapse_counts())
    assert delta == {"several SIMD-group functions in one statement (line 7)": 1}, delta
    x = rng.standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    k(x, out, grid=1, threads=64)
    sim.synchronize()
    for sg in range(2):
        v = x[sg * 32:(sg + 1) * 32].astype(np.float64)
        lanes = np.arange(32)
        ref = np.where(lanes % 3 == 0, v[lanes % 3 == 0].sum(), (v[lanes % 3 != 0] * 2).max())
        # a float32 sum of 11 values: its error scales with the sum of their magnitudes
        np.testing.assert_allclose(out[sg * 32:(sg + 1) * 32], ref, rtol=1e-6, atol=1e-6 * np.abs(v).sum())


# A barrier under a branch that differs between lanes: refused, and the fiber path still reports
# the divergent barrier with its line.
DIVERGENT_BARRIER = r"""
#include <metal_stdlib>
using namespace metal;
kernel void divergent(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  float s = simd_sum(1.0f);
  if (lane < 16) threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lane] = s;
}
"""


def test_divergent_barrier_is_refused_and_still_reported(sim):
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(DIVERGENT_BARRIER, "divergent", sim)
    (reason,) = _outcome_delta(before, _core.sim_collapse_counts())
    assert "control flow that differs between lanes" in reason
    with pytest.raises(triton_mps.Error, match=r"divergent barrier.*line 6"):
        k(np.zeros(32, np.float32), grid=1, threads=32)
        sim.synchronize()


# Memcheck inside a collapsed kernel: the bad store is stopped and the report names the thread
# that made it (the lane the collapsed loop ran) and its line.
OOB_ONE_THREAD = r"""
#include <metal_stdlib>
using namespace metal;
kernel void oob(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                uint lane [[thread_index_in_simdgroup]]) {
  float s = simd_sum((float)lane);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint i = gid == 37 ? 4096u : gid;
  out[i] = s;
}
"""


def test_memcheck_report_names_the_lane_of_a_collapsed_kernel(sim, monkeypatch):
    monkeypatch.delenv("TRITON_MPS_SIM_COLLAPSE", raising=False)
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(OOB_ONE_THREAD, "oob", sim)
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {"collapsed": 1}
    with pytest.raises(triton_mps.Error, match=r"(?s)out-of-bounds store.*thread \(37,0,0\).*line 9"):
        k(np.zeros(64, np.float32), grid=1, threads=64)
        sim.synchronize()


# simdgroup_matrix in a collapsed kernel (tmps_metal_matrix.h, sg_matrix): a whole matrix per
# SIMD-group, loads and stores per lane, multiplies once. Half, float and bfloat matrices; loads
# from device and threadgroup memory, transposed and not; multiply with and without c, in place
# over a uniform loop, into a half and a bfloat destination (rounded there); stores transposed and
# not; the SIMD-group's origin from simdgroup_index_in_threadgroup and from tid >> 5.
MATRICES = r"""
#include <metal_stdlib>
using namespace metal;
kernel void matrices(device const half* a [[buffer(0)]], device const float* b [[buffer(1)]],
                     device float* out [[buffer(2)]], device half* out_h [[buffer(3)]],
                     device bfloat* out_b [[buffer(4)]], constant uint& rounds [[buffer(5)]],
                     uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint3 tg [[threadgroup_position_in_grid]]) {
  threadgroup float bt[2 * 64];
  for (uint i = tid; i < 2 * 64; i += 64) bt[i] = b[tg.x * 128 + i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint w = tid >> 5u;
  simdgroup_half8x8 ma;
  simdgroup_load(ma, a + tg.x * 128, 8, ulong2(0, 8 * sg));
  simdgroup_float8x8 mb;
  simdgroup_load(mb, (threadgroup float*)bt + 64 * w, 8, ulong2(0, 0), true);
  simdgroup_float8x8 p;
  simdgroup_multiply(p, ma, mb);
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
  for (uint r = 0; r < rounds; ++r) simdgroup_multiply_accumulate(acc, p, mb, acc);
  simdgroup_half8x8 h;
  simdgroup_multiply_accumulate(h, ma, mb, p);
  simdgroup_bfloat8x8 bf = make_filled_simdgroup_matrix<bfloat, 8, 8>((bfloat)0.0f);
  if (w < 2u) simdgroup_multiply(bf, p, mb);  // uniform: w is the SIMD-group's index
  uint base = (tg.x * 2 + w) * 64;
  simdgroup_store(acc, out + base, 8);
  simdgroup_store(p, out + 256 * 2 + base, 8, ulong2(0, 0), true);
  simdgroup_store(h, out_h + base, 8);
  simdgroup_store(bf, out_b + base, 8);
}
"""


def test_simdgroup_matrices_collapsed_give_the_bits_of_fibers(sim, rng, monkeypatch):
    groups, rounds = 2, 3
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(MATRICES, "matrices", sim)
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {"collapsed": 1}
    a = rng.uniform(-1, 1, groups * 128).astype(np.float16)
    b = rng.uniform(-1, 1, groups * 128).astype(np.float32)

    def run():
        out = np.full(4 * 256, np.nan, np.float32)
        out_h = np.full(256, np.nan, np.float16)
        out_b = np.full(256, 0xFFFF, np.uint16)  # bfloat bits (NaN)
        k(a, b, out, out_h, out_b, np.uint32(rounds), grid=groups, threads=64)
        sim.synchronize()
        return out, out_h, out_b

    (o1, h1, b1), (o0, h0, b0) = collapsed_and_fibers(monkeypatch, run)
    np.testing.assert_array_equal(o1.view(np.uint32), o0.view(np.uint32))
    np.testing.assert_array_equal(h1.view(np.uint16), h0.view(np.uint16))
    np.testing.assert_array_equal(b1, b0)
    # and right, against float64
    for g in range(groups):
        for w in range(2):
            base = (g * 2 + w) * 64
            ma = a[g * 128 + 64 * w: g * 128 + 64 * w + 64].astype(np.float64).reshape(8, 8)
            mb = b[g * 128 + 64 * w: g * 128 + 64 * w + 64].astype(np.float64).reshape(8, 8).T
            p = ma @ mb
            acc = np.full((8, 8), 0.5)
            for _ in range(rounds):
                acc = p @ mb + acc
            np.testing.assert_allclose(o1[base:base + 64].reshape(8, 8), acc, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(o1[512 + base:512 + base + 64].reshape(8, 8), p.T, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(h1[base:base + 64].reshape(8, 8), ma @ mb + p, rtol=2e-3, atol=2e-3)
            bf = (b1[base:base + 64].astype(np.uint32) << 16).view(np.float32).reshape(8, 8)
            np.testing.assert_allclose(bf, p @ mb, rtol=1e-2, atol=1e-2)


# A simdgroup_load that reads past its buffer: both paths stop it and name the same lane (the
# first to run whose elements are out of bounds).
MATRIX_OOB = r"""
#include <metal_stdlib>
using namespace metal;
kernel void matrix_oob(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint tid [[thread_index_in_threadgroup]]) {
  float s = simd_sum(1.0f);
  simdgroup_float8x8 m;
  simdgroup_load(m, x, 8, ulong2(0, 1));
  simdgroup_store(m, out, 8);
  out[64 + tid] = s;
}
"""


def test_simdgroup_load_out_of_bounds_is_reported_alike(sim, monkeypatch):
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(MATRIX_OOB, "matrix_oob", sim)
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {"collapsed": 1}

    def run():
        with pytest.raises(triton_mps.Error) as e:
            k(np.ones(64, np.float32), np.zeros(96, np.float32), grid=1, threads=32)
            sim.synchronize()
        return str(e.value)

    collapsed, fibers = collapsed_and_fibers(monkeypatch, run)
    assert re.search(r"out-of-bounds load of 8 bytes .*element 70\) by thread \(31,0,0\)", collapsed), collapsed
    assert collapsed == fibers


# A matrix declared under a branch that differs between lanes: refused, runs on fibers.
MATRIX_DIVERGENT = r"""
#include <metal_stdlib>
using namespace metal;
kernel void matrix_divergent(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint lane [[thread_index_in_simdgroup]]) {
  float s = simd_sum(x[lane]);
  if (lane < 40u) {
    simdgroup_float8x8 m;
    simdgroup_load(m, x, 8);
    simdgroup_store(m, out, 8);
  }
  out[64 + lane] = s;
}
"""


def test_matrix_under_lane_varying_branch_is_refused(sim, rng):
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(MATRIX_DIVERGENT, "matrix_divergent", sim)
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {
        "a simdgroup_matrix declared where the lanes differ ('m')": 1}
    x = rng.standard_normal(64).astype(np.float32)
    out = np.full(96, np.nan, np.float32)
    k(x, out, grid=1, threads=32)
    sim.synchronize()
    np.testing.assert_array_equal(out[:64], x)
    np.testing.assert_allclose(out[64:], x[:32].astype(np.float64).sum(), rtol=1e-5)


# Lane values that are vectors: `s` and `h` are used by component only, so a collapsed kernel keeps
# them one array per component (vectorizable lane loops); `w` is used whole (`w * 2.0f`), so it
# stays an array of vectors. Component writes under a lane-varying branch and a whole assignment
# inside one exercise both forms.
LANE_VECTORS = r"""
#include <metal_stdlib>
using namespace metal;
kernel void lane_vectors(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float a = x[gid * 4 + 0];
  float b = x[gid * 4 + 1];
  float c = x[gid * 4 + 2];
  float d = x[gid * 4 + 3];
  uint4 s = simd_shuffle_xor(uint4(as_type<uint>(a), as_type<uint>(b), as_type<uint>(c), as_type<uint>(d)),
                             (ushort)(1u));
  float4 w = simd_shuffle_xor(float4(a, b, c, d), (ushort)(2u));
  half2 h = simd_shuffle_xor(half2((half)a, (half)b), (ushort)(4u));
  if (lane % 2 == 1) s.y = s.x;
  if (lane == 3) s = uint4(7u);
  float4 t = w * 2.0f;
  out[gid * 8 + 0] = as_type<float>(s.x);
  out[gid * 8 + 1] = as_type<float>(s.y);
  out[gid * 8 + 2] = as_type<float>(s.z);
  out[gid * 8 + 3] = as_type<float>(s.w);
  out[gid * 8 + 4] = (float)h.x;
  out[gid * 8 + 5] = (float)h.y;
  out[gid * 8 + 6] = t.x + t.w;
  out[gid * 8 + 7] = w.y;
}
"""


def test_lane_vectors_per_component_give_the_bits_of_fibers(sim, rng, monkeypatch):
    threads, groups = 64, 3
    n = threads * groups
    before = _core.sim_collapse_counts()
    k = triton_mps.compile_msl(LANE_VECTORS, "lane_vectors", sim)
    assert _outcome_delta(before, _core.sim_collapse_counts()) == {"collapsed": 1}
    x = rng.standard_normal(n * 4).astype(np.float32)

    def run():
        out = np.full(n * 8, np.nan, np.float32)
        k(x, out, grid=groups, threads=threads)
        sim.synchronize()
        return out.reshape(n, 8)

    collapsed, fibers = collapsed_and_fibers(monkeypatch, run)
    np.testing.assert_array_equal(collapsed.view(np.uint32), fibers.view(np.uint32))
    v = x.reshape(n, 4)
    i = np.arange(n)
    lane = i % 32
    s = v[i ^ 1].copy()
    s[lane % 2 == 1, 1] = s[lane % 2 == 1, 0]
    s[lane == 3] = np.uint32(7).view(np.float32)
    w = v[i ^ 2]
    h = v[i ^ 4, :2].astype(np.float16).astype(np.float32)
    want = np.concatenate([s, h, (w[:, 0] * 2 + w[:, 3] * 2)[:, None], w[:, 1:2]], axis=1)
    np.testing.assert_array_equal(collapsed.view(np.uint32), want.view(np.uint32))
