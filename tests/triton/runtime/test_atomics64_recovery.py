"""The lock table of 64-bit atomics after a dispatch that stopped (issue 21, item 2): a fault or a
timeout may stop a program inside its critical section, holding a lock; later 64-bit atomics on
that lock must not spin forever."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton_mps.backend import launcher
from triton_mps.compiler.ops.memory import LOCK_WORDS


@triton.jit
def add64(p, off):
    tl.atomic_add(p + off, 1)


@triton.jit
def add64_then_spin(p, flag):
    tl.atomic_add(p, 1)
    while tl.atomic_add(flag, 0) == 0:  # an atomic: the loop is not optimised away
        pass


def _slot(addr: int) -> int:
    """The lock of an 8-byte word (tmps_lock_slot in compiler/ops/memory.py)."""
    return (((addr >> 3) * 0x9E3779B97F4A7C15) % (1 << 64)) >> (64 - (LOCK_WORDS.bit_length() - 1))


def test_atomic_after_an_out_of_bounds_atomic_gets_its_lock(mps_driver, monkeypatch):
    dev = mps_driver.get_active_torch_device()
    small = torch.zeros(4, dtype=torch.int64, device=dev)
    far = 1 << 30  # far outside the buffer (and its host page: the emulated device's bound)
    with pytest.raises(Exception, match="out-of-bounds|fault"):
        add64[(1,)](small, far)  # memcheck stops it inside the critical section of that word's lock
    stray = _slot(small.data_ptr() + far * 8)
    big = torch.zeros(1 << 14, dtype=torch.int64, device=dev)
    i = next(i for i in range(big.numel()) if _slot(big.data_ptr() + 8 * i) == stray)
    monkeypatch.setenv("TRITON_MPS_TIMEOUT", "5")  # a lock left held spins until this watchdog
    add64[(1,)](big, i)
    assert int(big[i]) == 1


def test_timed_out_dispatch_retires_the_lock_table(mps_driver, monkeypatch):
    dev = mps_driver.get_active_torch_device()
    p = torch.zeros(1, dtype=torch.int64, device=dev)
    add64[(1,)](p, 0)  # the device's table exists
    tables = {k: v[1] for k, v in launcher._LOCK_TABLES.items()}
    monkeypatch.setenv("TRITON_MPS_TIMEOUT", "0.5")
    with pytest.raises(Exception, match="TRITON_MPS_TIMEOUT"):
        add64_then_spin[(64,)](p, torch.zeros(1, dtype=torch.int32, device=dev))
    # Whatever the stopped programs held, no later launch sees it: the table is a fresh one.
    assert not any(launcher._LOCK_TABLES.get(k, (None, None))[1] is b for k, b in tables.items())
    monkeypatch.delenv("TRITON_MPS_TIMEOUT")
    add64[(1,)](p, 0)
    assert int(p[0]) >= 2
