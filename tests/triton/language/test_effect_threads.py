"""The compiler's effect_threads hint (compiler/effects.py): threads past the bound only duplicate
lower threads, so the simulator skips them in kernels where threads cannot communicate. The
results must not change: every owner of a stored element must stay inside the bound."""

from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl


def _hint(k) -> int | None:
    msl = k.asm["msl"]
    msl = msl.decode() if isinstance(msl, bytes) else msl
    m = re.search(r"^// tmps-sim: effect_threads=(\d+)\n(?:\[\[[^\n]*\]\]\s*)?kernel void", msl, re.M)
    return int(m.group(1)) if m else None


@triton.jit
def _double_in_place(p):
    pid = tl.program_id(0)
    x = tl.load(p + pid)
    tl.store(p + pid, x * 2)


@triton.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0 + 1.0, mask=m)


@triton.jit
def _outer(x_ptr, y_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    v = tl.load(x_ptr + r)[:, None] * tl.load(y_ptr + c)[None, :]
    tl.store(out_ptr + r[:, None] * C + c[None, :], v)


@triton.jit
def _count(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(hist_ptr + tl.load(x_ptr + offs, mask=m, other=0), 1, mask=m)


@triton.jit
def _row_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


def test_scalar_store_runs_in_thread_zero_only(rng):
    # In place, many times, as upstream's test_load_store_same_ptr: each thread loads before
    # thread 0 stores on a GPU; a skipped thread must not have been needed.
    x0 = torch.from_numpy(rng.standard_normal(4099).astype("float32"))
    x = x0.clone()
    for _ in range(3):
        k = _double_in_place[(x.numel(),)](x, num_warps=32)
    assert _hint(k) == 1
    torch.testing.assert_close(x, x0 * 8, rtol=0, atol=0)


@pytest.mark.parametrize("block,warps", [(64, 4), (256, 4), (32, 8)])
def test_duplicated_layout_bound_covers_every_owner(block, warps, rng):
    n = 3 * block + 7  # not a multiple of the block
    x = torch.from_numpy(rng.standard_normal(n).astype("float32"))
    out = torch.full((n,), float("nan"))
    k = _scale[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=warps)
    torch.testing.assert_close(out, (x.double() * 3 + 1).float(), rtol=1e-6, atol=1e-6)
    # One element per thread (the layout Triton picks here): the first `block` threads own
    # the block, the others hold copies; with no copies there is no hint.
    assert _hint(k) == (block if block < 32 * warps else None)


def test_two_dimensional_store(rng):
    x = torch.from_numpy(rng.standard_normal(8).astype("float32"))
    y = torch.from_numpy(rng.standard_normal(16).astype("float32"))
    out = torch.full((8, 16), float("nan"))
    _outer[(1,)](x, y, out, R=8, C=16, num_warps=8)
    torch.testing.assert_close(out, torch.outer(x.double(), y.double()).float())


def test_no_hint_with_atomics_or_threadgroup_memory(rng):
    n, bins = 1000, 7
    x = torch.from_numpy(rng.integers(0, bins, n).astype("int32"))
    hist = torch.zeros(bins, dtype=torch.int32)
    k = _count[(triton.cdiv(n, 64),)](x, hist, n, BLOCK=64, num_warps=4)
    assert _hint(k) is None
    assert hist.tolist() == torch.bincount(x.long(), minlength=bins).tolist()

    v = torch.from_numpy(rng.standard_normal(256).astype("float32"))
    s = torch.full((1,), float("nan"))
    k = _row_sum[(1,)](v, s, BLOCK=256, num_warps=4)
    assert _hint(k) is None
    torch.testing.assert_close(s[0], v.double().sum().float(), rtol=1e-5, atol=1e-5)
