"""Triton kernels on collapsed SIMD-groups (issue 29, sim/simd_collapse.h): the bits of one fiber
per thread (TRITON_MPS_SIM_COLLAPSE=0, read at each dispatch) and the right values."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from tmps_testing import collapsed_and_fibers
from triton_mps import _core


# Triton kernels: reductions and scans through SIMD-group functions and threadgroup memory,
# sizes that are not multiples of the block.
@triton.jit
def _softmax(x, o, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * n + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(o + row * n + cols, e / tl.sum(e, axis=0), mask=cols < n)


@triton.jit
def _cumsum_argmax(x, o, idx, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * n + cols, mask=cols < n, other=0.0)
    tl.store(o + row * n + cols, tl.cumsum(v, axis=0), mask=cols < n)
    tl.store(idx + row, tl.argmax(tl.where(cols < n, v, -float("inf")), axis=0))


@pytest.mark.parametrize("n", [1000, 77])
def test_triton_reductions_collapsed_give_the_bits_of_fibers(monkeypatch, n):
    rows = 24
    x = torch.randn(rows, n, dtype=torch.float32)

    def run():
        o = torch.full_like(x, float("nan"))
        c = torch.full_like(x, float("nan"))
        i = torch.full((rows,), -1, dtype=torch.int32)
        _softmax[(rows,)](x, o, n, BLOCK=triton.next_power_of_2(n))
        _cumsum_argmax[(rows,)](x, c, i, n, BLOCK=triton.next_power_of_2(n))
        return o, c, i

    before = _core.sim_collapse_counts().get("collapsed", 0)
    (o1, c1, i1), (o0, c0, i0) = collapsed_and_fibers(monkeypatch, run)
    assert _core.sim_collapse_counts().get("collapsed", 0) >= before + 2
    assert torch.equal(o1.view(torch.int32), o0.view(torch.int32))
    assert torch.equal(c1.view(torch.int32), c0.view(torch.int32))
    assert torch.equal(i1, i0)
    x64 = x.double()
    torch.testing.assert_close(o1.double(), torch.softmax(x64, 1), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(c1.double(), torch.cumsum(x64, 1), rtol=1e-4, atol=1e-4)
    assert torch.equal(i1.long(), x.argmax(1))
