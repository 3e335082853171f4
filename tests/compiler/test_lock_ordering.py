"""A spin lock guarding plain loads and stores by every thread of a program (issue 21, item 9):
the pattern of Triton's fused layer-norm backward (tutorial 05, `_layer_norm_bwd_dx_fused`)."""

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps
from ttgir_harness import compile_kernel


@triton.jit
def locked_partial_sums(DB, DY, Lock, N, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # Each row adds itself to partial row `row % GROUP` under that group's lock; Count says
    # whether the partial row holds data yet (the tutorial's uninitialised-partials scheme).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    partial = tl.load(DY + row * N + cols, mask=mask, other=0.0)
    lock_id = row % GROUP
    Lock += lock_id
    Count = Lock + GROUP
    DB = DB + lock_id * N + cols
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial += tl.load(DB, mask=mask)
    tl.store(DB, partial, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


SIG = {"DB": "*fp32", "DY": "*fp32", "Lock": "*i32", "N": "i32", "GROUP": "constexpr", "BLOCK": "constexpr"}


def _compile(device=None, groups=8, block=512, num_warps=4):
    return compile_kernel(locked_partial_sums, SIG, {"GROUP": groups, "BLOCK": block}, num_warps, device=device)


def test_every_thread_fences_at_device_scope_around_the_lock():
    # Thread 0 takes and gives back the lock; all threads read and write what it guards. On
    # Metal each thread needs its own device-scope fence: after the barrier that follows the
    # acquiring CAS (before its loads) and before the barrier that precedes the releasing
    # exchange (after its stores). Fences only in thread 0 leave the other threads unordered.
    k = _compile()
    lines = [ln.strip() for ln in k.msl[k.msl.index("kernel void"):].splitlines()]

    def guard_of(needle: str) -> tuple[int, int]:
        at = next(i for i, ln in enumerate(lines) if needle in ln)
        start = max(i for i in range(at) if lines[i] == "if (tmps_tid == 0u) {")
        end = next(i for i in range(at, len(lines)) if lines[i] == "}")
        return start, end

    start, end = guard_of("tmps_atomic_cas_int(")
    assert lines[end + 1:end + 3] == ["threadgroup_barrier(mem_flags::mem_device);", "TMPS_DEVICE_FENCE();"]
    release = [i for i, ln in enumerate(lines) if "atomic_exchange_explicit" in ln and "Lock" in ln][-1]
    start, end = guard_of(lines[release])
    assert lines[start - 2:start] == ["TMPS_DEVICE_FENCE();", "threadgroup_barrier(mem_flags::mem_device);"]


@pytest.mark.parametrize("device", ["sim", "metal-emu"])
def test_locked_partial_sums_are_exact(device):
    # Small integers in fp32: every partial sum is exact, so one lost or stale update shows
    # as a difference from the float64 reference. 20 runs, fresh locks and partials each.
    n, rows, groups = 500, 300, 8
    k = _compile(triton_mps.get_device(device), groups)
    rng = np.random.default_rng(9)
    dy = rng.integers(-64, 65, size=(rows, n)).astype(np.float32)
    ref = np.stack([dy[g::groups].astype(np.float64).sum(0) for g in range(groups)])
    for run in range(20):
        db = np.full((groups, n), np.nan, np.float32)
        lock = np.zeros(2 * groups, np.int32)
        k(db, dy, lock, n, grid=rows)
        assert not lock[:groups].any(), f"run {run}: a lock is still held"
        np.testing.assert_array_equal(db.astype(np.float64), ref, err_msg=f"run {run}")
