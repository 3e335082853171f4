"""Reductions and scans whose threads hold several rows exchange them between lanes in one vector
shuffle per round (compiler/lane_exchange.py): Triton-level results through kernel[grid], for the
ways a value is packed (32-bit words, 64-bit pairs, 16- and 8-bit halves), on partial tiles.
Exact references only (max, argmax, integer sums, a running max with its position): any
packing mistake moves bits. tests/compiler/test_lane_exchange.py compares against the
one-shuffle-per-value path bit for bit."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int64, torch.uint8]


def _rand(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, dtype=torch.int64).to(dtype)


@triton.jit
def _rows_max_argmax(X, MX, AM, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    first = tl.load(X + r * N, mask=r < M, other=0)
    x = tl.where(m, tl.load(X + r * N + c, mask=m, other=0), first)  # padding never wins
    ro = tl.arange(0, BM)
    tl.store(MX + ro, tl.max(x, axis=1), mask=ro < M)
    tl.store(AM + ro, tl.argmax(x, axis=1, tie_break_left=True), mask=ro < M)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, block, warps", [((61, 29), (64, 32), 4), ((13, 50), (16, 64), 2)])
def test_rows_max_argmax(mps_driver, dtype, shape, block, warps):
    dev = mps_driver.get_active_torch_device()
    M, N = shape
    x = _rand(shape, dtype)
    mx = torch.empty(M, dtype=dtype, device=dev)
    am = torch.full((M,), -1, dtype=torch.int32, device=dev)
    k = _rows_max_argmax[(1,)](x.to(dev), mx, am, M, N, BM=block[0], BN=block[1], num_warps=warps)
    assert "uint4(" in k.asm["msl"] or "uint2(" in k.asm["msl"]  # the batched path ran
    xw = x.double() if dtype.is_floating_point else x.long()
    assert torch.equal(mx.cpu(), x.max(dim=1).values)
    # first index of the maximum (torch's argmax picks one of the ties, so compare values)
    want = torch.tensor([int((xw[i] == xw[i].max()).nonzero()[0]) for i in range(M)], dtype=torch.int32)
    assert torch.equal(am.cpu(), want)


@triton.jit
def _running_max(a, ai, b, bi):
    take = b >= a
    return tl.where(take, b, a), tl.where(take, bi, ai)


@triton.jit
def _rows_scans(X, CS, RM, RI, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(X + r * N + c, mask=m, other=0)
    tl.store(CS + r * N + c, tl.cumsum(x.to(tl.int8).to(tl.int32), axis=1), mask=m)  # no overflow
    v, i = tl.associative_scan((x, (c + r * 0).to(tl.int16)), 1, _running_max)
    tl.store(RM + r * N + c, v, mask=m)
    tl.store(RI + r * N + c, i, mask=m)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.float16, torch.bfloat16, torch.int64])
def test_rows_scans(mps_driver, dtype):
    dev = mps_driver.get_active_torch_device()
    M, N = 29, 60
    x = _rand((M, N), dtype)
    cs = torch.empty(M, N, dtype=torch.int32, device=dev)
    rm = torch.empty(M, N, dtype=dtype, device=dev)
    ri = torch.empty(M, N, dtype=torch.int16, device=dev)
    _rows_scans[(1,)](x.to(dev), cs, rm, ri, M, N, BM=32, BN=64, num_warps=4)
    xi = x.to(torch.int8).to(torch.int32)  # floats truncate toward zero, integers wrap, as in Triton
    assert torch.equal(cs.cpu(), torch.cumsum(xi, 1, dtype=torch.int32))
    want_v = torch.cummax(x.double() if dtype.is_floating_point else x.long(), 1)
    assert torch.equal(rm.cpu(), want_v.values.to(dtype))
    # the position of the last maximum so far (b >= a takes the later element on ties)
    xw = x.double() if dtype.is_floating_point else x.long()
    want_i = torch.empty(M, N, dtype=torch.int16)
    for row in range(M):
        best = 0
        for col in range(N):
            if xw[row, col] >= xw[row, best]:
                best = col
            want_i[row, col] = best
    assert torch.equal(ri.cpu(), want_i)
