"""Ops after an early `return` live in a second block of the function (cf.cond_br): every
per-module scan (which arguments are written, 64-bit atomics, device prints, the simulator's
effect_threads hint) must see them. Each of these once looked only at the entry block."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton_mps import _core


@triton.jit
def _add_one_after_return(x, o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


@triton.jit
def _atomic64_after_return(x, o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(o + offs % 3, tl.load(x + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _print_after_return(x, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    tl.device_print("v", tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)))


def test_store_after_return_writes_every_element(rng):
    n, block = 200, 64
    x = rng.standard_normal(n).astype(np.float32)
    o = np.full(n, np.nan, np.float32)
    _add_one_after_return[(8,)](x, o, n, BLOCK=block)  # programs past n return early
    np.testing.assert_array_equal(o, x + np.float32(1))


def test_read_only_array_refused_for_a_store_after_return(rng):
    x = rng.standard_normal(100).astype(np.float32)
    o = np.zeros(100, np.float32)
    o.flags.writeable = False
    with pytest.raises(_core.InvalidArgument, match="read-only.*stores through it"):
        _add_one_after_return[(2,)](x, o, 100, BLOCK=64)
    assert not o.any()


def test_64_bit_atomic_after_return(rng):
    n = 100
    x = torch.from_numpy(rng.integers(-(1 << 40), 1 << 40, n))
    o = torch.from_numpy(rng.integers(-(1 << 40), 1 << 40, 3))
    want = [o[i].item() + x[i::3].sum().item() for i in range(3)]
    _atomic64_after_return[(4,)](x, o, n, BLOCK=64)
    assert o.tolist() == want


def test_print_after_return(capfd, rng):
    x = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
    _print_after_return[(2,)](x, 8, BLOCK=8)
    out = capfd.readouterr().out
    assert out.count("v") == 8, out
