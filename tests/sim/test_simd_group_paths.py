"""The simulator's fast paths for SIMD-group functions (issue 20) compute what the slow paths do.

- Lanes pass control to each other directly (scheduler.cpp, switch_to_next); interleaving
  (TRITON_MPS_SIM_INTERLEAVE) still resumes every lane from the scheduler, in a random order.
  A race-free kernel gives the same bits either way.
- The shim's SIMD-group functions are memcheck-trusted end to end (tmps_metal_simd.h): a memcheck
  build gives the same bits as a build without memcheck, and memcheck still stops a bad access
  whose address comes out of a SIMD-group function, naming its line.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps

# Shuffles (xor butterfly, up, down, broadcast), prefix sums, reductions in divergent branches,
# lanes that return early, and a threadgroup barrier with a cross-SIMD-group exchange through
# threadgroup memory: every kind of blocking point the scheduler passes control through.
COLLECTIVES = r"""
#include <metal_stdlib>
using namespace metal;
kernel void collectives(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        threadgroup float* tile [[threadgroup(0)]],
                        uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
  float v = x[gid];
  float m = v;
  for (ushort s = 1; s < 32; s <<= 1) m = max(m, simd_shuffle_xor(m, s));
  float e = exp(v - m);
  float scan = simd_prefix_inclusive_sum(e);
  float up = simd_shuffle_up(e, (ushort)3), down = simd_shuffle_down(e, (ushort)5);
  float first = simd_broadcast(v, (ushort)7);
  float part = lane % 3 == 0 ? simd_sum(e) : simd_max(v * 2.0f);
  if (sg == 0) tile[lane] = scan;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float other = tile[(lane + sg) % 32];
  out[gid * 8 + 0] = m;
  out[gid * 8 + 1] = scan;
  out[gid * 8 + 2] = up;
  out[gid * 8 + 3] = down;
  out[gid * 8 + 4] = first;
  out[gid * 8 + 5] = part;
  out[gid * 8 + 6] = other;
  if (lane % 5 == 1) return;
  out[gid * 8 + 7] = simd_sum(other * (float)(sg + 1));
}
"""

THREADS, GROUPS = 128, 6


def _run(dev, k, x):
    out = np.full(x.size * 8, np.nan, np.float32)
    k(x, out, grid=GROUPS, threads=THREADS, threadgroup_memory=[(0, 32 * 4)])
    dev.synchronize()
    return out.reshape(-1, 8)


def _reference(x):
    """numpy in float64, lane by lane (inactive lanes for the last sum: lane % 5 == 1)."""
    ref = np.full((x.size, 8), np.nan)
    for g in range(GROUPS):
        tile = None
        rows = []
        for sg in range(THREADS // 32):
            base = g * THREADS + sg * 32
            v = x[base:base + 32].astype(np.float64)
            m = v.max()
            e = np.exp(v - m)
            scan = np.cumsum(e)
            if sg == 0:
                tile = scan.copy()
            rows.append((base, v, m, e, scan, sg))
        for base, v, m, e, scan, sg in rows:
            lanes = np.arange(32)
            r = ref[base:base + 32]
            r[:, 0] = m
            r[:, 1] = scan
            r[:, 2] = np.where(lanes >= 3, e[np.maximum(lanes - 3, 0)], e)
            r[:, 3] = np.where(lanes < 27, e[np.minimum(lanes + 5, 31)], e)
            r[:, 4] = v[7]
            r[:, 5] = np.where(lanes % 3 == 0, e[lanes % 3 == 0].sum(), (v[lanes % 3 != 0] * 2).max())
            other = tile[(lanes + sg) % 32]
            r[:, 6] = other
            active = lanes % 5 != 1
            r[:, 7] = np.where(active, (other * (sg + 1))[active].sum(), np.nan)
    return ref


@pytest.fixture
def x(rng):
    return rng.standard_normal(GROUPS * THREADS).astype(np.float32)


def test_collectives_match_numpy(sim, x):
    out = _run(sim, triton_mps.compile_msl(COLLECTIVES, "collectives", sim), x)
    np.testing.assert_allclose(out, _reference(x), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [1, 5])
def test_chained_lanes_give_the_bits_of_the_scheduler_path(sim, x, monkeypatch, seed):
    k = triton_mps.compile_msl(COLLECTIVES, "collectives", sim)
    monkeypatch.delenv("TRITON_MPS_SIM_INTERLEAVE", raising=False)
    chained = _run(sim, k, x)
    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", str(seed))  # every switch via the scheduler
    scheduled = _run(sim, k, x)
    np.testing.assert_array_equal(chained.view(np.uint32), scheduled.view(np.uint32))


def test_memcheck_build_gives_the_bits_of_a_build_without(sim, x):
    checked = _run(sim, triton_mps.compile_msl(COLLECTIVES, "collectives", sim), x)
    unchecked = _run(sim, triton_mps.compile_msl(COLLECTIVES, "collectives", sim, memcheck=False), x)
    np.testing.assert_array_equal(checked.view(np.uint32), unchecked.view(np.uint32))


# The store's index comes out of the trusted SIMD-group chain: still checked, at its line.
OOB_AFTER_SHUFFLE = r"""
#include <metal_stdlib>
using namespace metal;
kernel void oob(device uint* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  uint i = simd_shuffle_xor(lane, (ushort)1) + simd_sum(1u);
  out[i] = lane;
}
"""


def test_memcheck_stops_a_store_indexed_by_a_simd_result(sim):
    k = triton_mps.compile_msl(OOB_AFTER_SHUFFLE, "oob", sim)
    out = np.zeros(40, np.uint32)  # lane ^ 1 + 32 reaches 63
    with pytest.raises(triton_mps.Error, match=r"(?s)out-of-bounds store.*line 6"):
        k(out, grid=1, threads=32)
        sim.synchronize()
