"""Regressions found while writing kernels/layer_norm.py, attention.py and conv2d.py."""

import numpy as np
import pytest
import triton
import triton.language as tl
from ttgir_harness import compile_kernel


@triton.jit
def spin_lock_loop(lock_ptr, count_ptr, n_tries):
    # scf.while whose `do` region is empty: the printer shows its `scf.yield` (unlike scf.for/if).
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(count_ptr, tl.load(count_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_while_with_empty_do_region_compiles_and_runs():
    k = compile_kernel(spin_lock_loop, {"lock_ptr": "*i32", "count_ptr": "*i32", "n_tries": "i32"}, {}, 1)
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    k(lock, count, 0, grid=37)
    assert lock[0] == 0 and count[0] == 37


@triton.jit
def locked_increment(lock_ptr, buf_ptr, zeros_ptr, heavy, BLOCK: tl.constexpr):
    # Every program adds 1 to all of buf under one lock. Even programs spend long between their
    # load and store, so the threads after thread 0 store late: the release by thread 0 must wait
    # for the stores of every thread of the program (a threadgroup barrier before the release).
    offs = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    x = tl.load(buf_ptr + offs)
    n = tl.where(tl.program_id(0) % 2 == 0, heavy, 0)
    for _ in range(n):
        x += tl.atomic_add(zeros_ptr + offs, 0)  # adds 0; an atomic, so the loop is not folded away
    tl.store(buf_ptr + offs, x + 1)
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize("num_warps", [2, 8])
def test_lock_release_waits_for_every_thread_of_the_program(num_warps):
    block = 32 * num_warps
    k = compile_kernel(locked_increment, {"lock_ptr": "*i32", "buf_ptr": "*i32", "zeros_ptr": "*i32", "heavy": "i32",
                                          "BLOCK": "constexpr"}, {"BLOCK": block}, num_warps)
    # A release (acq_rel atomic on a scalar) is preceded by a device-memory barrier.
    body = k.msl[k.msl.index("kernel void"):]
    xchg = body.index("atomic_exchange_explicit")
    assert "threadgroup_barrier(mem_flags::mem_device)" in body[:xchg]
    programs = 24
    lock, buf = np.zeros(1, np.int32), np.zeros(block, np.int32)
    k(lock, buf, np.zeros(block, np.int32), 3000, grid=programs)
    assert lock[0] == 0
    np.testing.assert_array_equal(buf, np.full(block, programs, np.int32))


@triton.jit
def scalar_counter(count_ptr, SEM: tl.constexpr):
    tl.atomic_add(count_ptr, 1, sem=SEM)


@pytest.mark.parametrize("sem,before,after", [("relaxed", 0, 0), ("release", 1, 0), ("acquire", 0, 1),
                                              ("acq_rel", 1, 1)])
def test_scalar_atomic_fences_follow_sem(sem, before, after):
    k = compile_kernel(scalar_counter, {"count_ptr": "*i32", "SEM": "constexpr"}, {"SEM": sem}, 2)
    body = k.msl[k.msl.index("kernel void"):]
    at = body.index("atomic_fetch_add_explicit")
    fence = "threadgroup_barrier(mem_flags::mem_device)"
    assert (body[:at].count(fence), body[at:].count(fence)) == (before, after)
    count = np.zeros(1, np.int32)
    k(count, grid=50)
    assert count[0] == 50  # once per program, not once per thread
