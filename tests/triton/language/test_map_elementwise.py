"""`tl.map_elementwise`: a scalar @triton.jit function applied elementwise (compiler/ops/elementwise.py),
with branches (early returns), several outputs and `pack`."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _sign_of_difference(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def _divmod(a, b):
    return a // b, a % b


@triton.jit
def _clamp_pair(a0, a1, lo0, lo1):
    # pack=2: two elements of each operand per call; results: both of the first output, then the second
    return tl.maximum(a0, lo0), tl.maximum(a1, lo1), a0 * 2.0 + a1, a1 * 2.0 + a0


@triton.jit
def compare_kernel(X, Y, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    z = tl.map_elementwise(_sign_of_difference, tl.load(X + offs, mask=m), tl.load(Y + offs, mask=m))
    tl.store(Z + offs, z, mask=m)


@triton.jit
def divmod_kernel(A, B, Q, R, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    q, r = tl.map_elementwise(_divmod, tl.load(A + offs, mask=m), tl.load(B + offs, mask=m, other=1))
    tl.store(Q + offs, q, mask=m)
    tl.store(R + offs, r, mask=m)


@triton.jit
def pack_kernel(A, LO, C, D, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c, d = tl.map_elementwise(_clamp_pair, tl.load(A + offs), tl.load(LO + offs), pack=2)
    tl.store(C + offs, c)
    tl.store(D + offs, d)


def test_branches_in_the_function(mps_driver, rng):
    dev = mps_driver.get_active_torch_device()
    n = 300  # not a multiple of the block
    x = torch.from_numpy(rng.integers(-3, 3, n, dtype="int32")).to(dev)
    y = torch.from_numpy(rng.integers(-3, 3, n, dtype="int32")).to(dev)
    z = torch.full((n,), 99, dtype=torch.int32, device=dev)
    compare_kernel[(triton.cdiv(n, 128),)](x, y, z, n, BLOCK=128)
    assert torch.equal(z.cpu(), torch.sign(x.cpu() - y.cpu()).to(torch.int32))


def test_several_outputs_signed(mps_driver, rng):
    dev = mps_driver.get_active_torch_device()
    n = 200
    a = torch.from_numpy(rng.integers(-1000, 1000, n, dtype="int32")).to(dev)
    b = torch.from_numpy(rng.choice([-7, -3, -1, 1, 2, 5, 9], n).astype("int32")).to(dev)
    q = torch.full((n,), 99, dtype=torch.int32, device=dev)
    r = torch.full((n,), 99, dtype=torch.int32, device=dev)
    divmod_kernel[(triton.cdiv(n, 64),)](a, b, q, r, n, BLOCK=64)
    # Triton's integer // and % truncate toward zero (C semantics)
    want_q = torch.div(a.cpu(), b.cpu(), rounding_mode="trunc")
    assert torch.equal(q.cpu(), want_q)
    assert torch.equal(r.cpu(), a.cpu() - want_q * b.cpu())


@pytest.mark.parametrize("block, num_warps", [(256, 4), (32, 1), (64, 4)])  # 2, 1 and 0.5 elements per thread
def test_pack(mps_driver, rng, block, num_warps):
    dev = mps_driver.get_active_torch_device()
    # small integers as floats: a0 * 2 + a1 is exact, so the partner element can be recovered
    a = torch.from_numpy(rng.integers(-10**4, 10**4, block).astype("float32")).to(dev)
    lo = torch.from_numpy(rng.standard_normal(block, dtype="float32")).to(dev)
    c = torch.full((block,), float("nan"), device=dev)
    d = torch.full((block,), float("nan"), device=dev)
    pack_kernel[(1,)](a, lo, c, d, BLOCK=block, num_warps=num_warps)
    torch.testing.assert_close(c.cpu(), torch.maximum(a, lo).cpu(), rtol=0, atol=0)
    # d pairs elements two by two as the compiler groups registers: check the pairing is one of
    # the partner choices the layout allows (each element with one other element of the tile)
    ac = a.cpu()
    partner = (d.cpu() - ac * 2.0)  # = the partner element of each position
    assert torch.isin(partner, ac).all(), "every d mixes an element with another element of a"
