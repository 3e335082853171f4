"""tl.cumsum / tl.cumprod of bf16/f16 carry its partial sums in fp32 and round each result once (issue 7:
a bf16 carry drifted past Triton's rtol 1e-2 against an fp32 cumsum)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _cumsum(X, Z, M, N, stride, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr, REV: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    m = (rm < M) & (rn < N)
    x = tl.load(X + rm * stride + rn, mask=m, other=0.0)
    tl.store(Z + rm * stride + rn, tl.cumsum(x, axis=AXIS, reverse=REV), mask=m)


@triton.jit
def _cumprod(X, Z, N, BN: tl.constexpr):
    rn = tl.arange(0, BN)
    m = rn < N
    x = tl.load(X + rn, mask=m, other=1.0)
    tl.store(Z + rn, tl.cumprod(x, axis=0), mask=m)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape, block, axis",
                         [((5, 500), (8, 512), 1), ((300, 7), (512, 8), 0), ((30, 29), (32, 32), 1)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_rounds_once(mps_driver, dtype, shape, block, axis, reverse):
    dev = mps_driver.get_active_torch_device()
    M, N = shape
    x = torch.randn(shape).to(dtype)
    z = torch.full(shape, float("nan"), dtype=dtype)
    xd, zd = x.to(dev), z.to(dev)
    _cumsum[(1,)](xd, zd, M, N, N, BM=block[0], BN=block[1], AXIS=axis, REV=reverse)
    xf = x.double().flip(axis) if reverse else x.double()
    ref = xf.cumsum(axis)
    ref = ref.flip(axis) if reverse else ref
    got = zd.cpu().double()
    # fp32 partial sums (a few fp32 ulps from the exact sum), then one rounding: within one
    # ulp of the exactly rounded value, and equal to it almost everywhere
    want = ref.to(dtype).double()
    ulp = (ref.abs().to(dtype).double() * (2.0 ** -7 if dtype == torch.bfloat16 else 2.0 ** -10)).clamp_min(1e-30)
    assert torch.all((got - want).abs() <= ulp + 1e-6)
    assert (got != want).float().mean() < 0.01


def test_cumprod_bf16(mps_driver):
    """cumprod carries fp32 products the same way (one rounding per result)."""
    dev = mps_driver.get_active_torch_device()
    n = 100
    x = (1 + torch.rand(n) * 0.01).to(torch.bfloat16)
    z = torch.full((n,), float("nan"), dtype=torch.bfloat16, device=dev)
    _cumprod[(1,)](x.to(dev), z, n, BN=128)
    assert torch.isfinite(z.cpu().float()).all()
    torch.testing.assert_close(z.cpu().float(), x.float().cumprod(0).to(torch.bfloat16).float(), rtol=2**-7, atol=0)
