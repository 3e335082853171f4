"""The simulator's concurrency checks (memcheck builds):

- TRITON_MPS_RACECHECK=1: conflicting threadgroup-memory accesses by different SIMD-groups
  between two barriers, and reads of threadgroup memory no thread has written, stop the
  dispatch with a DispatchError naming both lines.
- TRITON_MPS_SIM_INTERLEAVE=<seed>: threads of a threadgroup switch at random at every memory
  access and atomic, so a plain load+store where a compare-and-swap belongs, or a broken lock,
  gives wrong results here instead of passing by luck of the lane-order schedule.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps

# Each thread publishes a value in threadgroup memory; the first SIMD-group reads the second's
# (the simulator runs threads from the last to the first, so the writer runs first).
# `barrier` decides whether a threadgroup_barrier separates the two.
EXCHANGE = r"""
#include <metal_stdlib>
using namespace metal;
kernel void exchange(device float* out [[buffer(0)]], const device float* x [[buffer(1)]],
                     constant int& barrier [[buffer(2)]], constant int& skip [[buffer(3)]],
                     threadgroup float* tile [[threadgroup(0)]],
                     uint i [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]]) {
  if (i >= uint(skip)) tile[i] = x[i];
  if (barrier) threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = i < 32 ? tile[i + 32] : tile[i];
}
"""
WRITE_LINE, READ_LINE = 8, 10

# Two SIMD-groups reduce into one threadgroup word without atomics (a lost-update race), and
# a correct version with a barrier between the phases.
ACCUMULATE = r"""
#include <metal_stdlib>
using namespace metal;
kernel void accumulate(device uint* out [[buffer(0)]], threadgroup uint* acc [[threadgroup(0)]],
                       uint i [[thread_position_in_threadgroup]]) {
  if (i == 0) acc[0] = 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (i % 32 == 0) acc[0] = acc[0] + 1;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (i == 0) out[0] = acc[0];
}
"""

# A device counter incremented by every thread: `mode` 0 plain load+store (a bug), 1 atomic,
# 2 a lock taken with atomic_exchange around a plain increment, 3 a broken lock (load, then
# store, not an atomic test-and-set).
COUNTER = r"""
#include <metal_stdlib>
using namespace metal;
kernel void counter(device uint* count [[buffer(0)]], device atomic_uint* lock [[buffer(1)]],
                    constant int& mode [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (mode == 0) {
    uint v = count[0];
    count[0] = v + 1;
  } else if (mode == 1) {
    atomic_fetch_add_explicit((device atomic_uint*)count, 1u, memory_order_relaxed);
  } else if (mode == 2) {
    while (atomic_exchange_explicit(lock, 1u, memory_order_relaxed) != 0u) {}
    uint v = count[0];
    count[0] = v + 1;
    atomic_store_explicit(lock, 0u, memory_order_relaxed);
  } else {
    device volatile uint* l = (device volatile uint*)lock;
    while (l[0] != 0u) {}
    l[0] = 1u;
    uint v = count[0];
    count[0] = v + 1;
    l[0] = 0u;
  }
}
"""

THREADS = 256


@pytest.fixture
def exchange(sim):
    return triton_mps.compile_msl(EXCHANGE, "exchange", sim, memcheck=True)


def _run_exchange(sim, k, rng, barrier, skip=0, n=64):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    k(out, x, barrier, skip, grid=1, threads=n, threadgroup_memory=[(0, n * 4)])
    sim.synchronize()
    return x, out


def test_race_between_simd_groups_is_reported_with_both_lines(sim, exchange, rng, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "1")
    with pytest.raises(triton_mps.DispatchError) as info:
        _run_exchange(sim, exchange, rng, barrier=0)
    msg = str(info.value)
    assert "kernel 'exchange': threadgroup memory race" in msg, msg
    assert "thread (31,0,0) in threadgroup (0,0,0) (SIMD-group 0)" in msg, msg
    assert f"reads [[threadgroup(0)]] memory at byte 252 at line {READ_LINE}" in msg, msg
    assert "which SIMD-group 1 wrote" in msg, msg
    assert f"wrote at line {WRITE_LINE}" in msg and "no threadgroup_barrier between them" in msg, msg
    assert "TRITON_MPS_RACECHECK=0" in msg
    # The same kernel with its barrier passes the check and computes the right answer.
    x, out = _run_exchange(sim, exchange, rng, barrier=1)
    np.testing.assert_array_equal(out, np.concatenate([x[32:64], x[32:64]]))


def test_without_the_check_the_race_goes_unreported(sim, exchange, rng, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "0")
    _run_exchange(sim, exchange, rng, barrier=0)  # the run order (writers first) happens to hide it


def test_uninitialized_threadgroup_read_is_reported(sim, exchange, rng, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "1")
    with pytest.raises(triton_mps.DispatchError) as info:
        _run_exchange(sim, exchange, rng, barrier=1, skip=40)  # threads 0-39 write nothing
    msg = str(info.value)
    assert "read of uninitialized threadgroup memory" in msg, msg
    # thread 39 (the first to read an unwritten word, threads running last to first) reads tile[39]
    assert "thread (39,0,0)" in msg and "of [[threadgroup(0)]] memory at byte 156" in msg, msg
    assert f"at line {READ_LINE}" in msg, msg


def test_lost_update_in_threadgroup_memory_is_a_race(sim, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "1")
    k = triton_mps.compile_msl(ACCUMULATE, "accumulate", sim, memcheck=True)
    out = np.zeros(1, np.uint32)
    with pytest.raises(triton_mps.DispatchError) as info:
        k(out, grid=1, threads=THREADS, threadgroup_memory=[(0, 16)])
        sim.synchronize()
    assert "threadgroup memory race" in str(info.value) and "line 8" in str(info.value), str(info.value)
    # Still usable: a clean kernel runs on the same device afterwards.
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "0")
    k(out, grid=1, threads=THREADS, threadgroup_memory=[(0, 16)])
    sim.synchronize()
    assert out[0] == THREADS // 32


def _count(sim, k, mode, groups=2):
    count = np.zeros(1, np.uint32)
    lock = np.zeros(1, np.uint32)
    k(count, lock, mode, grid=groups, threads=THREADS)
    sim.synchronize()
    return int(count[0])


@pytest.fixture
def counter(sim):
    return triton_mps.compile_msl(COUNTER, "counter", sim, memcheck=True)


def test_lane_order_hides_a_missing_atomic(sim, counter, monkeypatch):
    # Why the interleaving mode exists: without it every buggy variant passes on one worker.
    monkeypatch.delenv("TRITON_MPS_SIM_INTERLEAVE", raising=False)
    for mode in (0, 1, 2, 3):
        assert _count(sim, counter, mode, groups=1) == THREADS, mode


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleaving_exposes_a_missing_atomic_and_a_broken_lock(sim, counter, monkeypatch, seed):
    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", str(seed))
    assert _count(sim, counter, 1) == 2 * THREADS  # atomic_fetch_add
    assert _count(sim, counter, 2) == 2 * THREADS  # a correct spin lock
    assert _count(sim, counter, 0) < 2 * THREADS  # plain load + store loses updates
    assert _count(sim, counter, 3) < 2 * THREADS  # a lock without test-and-set admits two


def test_interleaving_is_reproducible_from_its_seed(sim, counter, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", "7")
    a = [_count(sim, counter, 0, groups=1) for _ in range(2)]
    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", "8")
    b = _count(sim, counter, 0, groups=1)
    assert a[0] == a[1], a
    assert b < THREADS and a[0] < THREADS


@pytest.mark.parametrize("var, value, allowed", [
    ("TRITON_MPS_RACECHECK", "yes", "must be 0 or 1"),
    ("TRITON_MPS_SIM_INTERLEAVE", "-3", "must be a seed"),
    ("TRITON_MPS_SIM_INTERLEAVE", "abc", "must be a seed"),
])
def test_bad_values_are_named(sim, counter, monkeypatch, var, value, allowed):
    monkeypatch.setenv(var, value)
    with pytest.raises(triton_mps.Error, match=allowed):
        _count(sim, counter, 1, groups=1)
    monkeypatch.delenv(var)
    assert _count(sim, counter, 1, groups=1) == THREADS


def test_checks_need_a_memcheck_build(sim, monkeypatch):
    k = triton_mps.compile_msl(COUNTER, "counter", sim, memcheck=False)
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "1")
    with pytest.raises(triton_mps.Error, match="need kernels built with memcheck"):
        _count(sim, k, 1, groups=1)
