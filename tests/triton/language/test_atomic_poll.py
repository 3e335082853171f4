"""tl.atomic_poll (issue 7): spin until *ptr == expected, or give up after the timeout's poll
budget; scalar and tensor forms, 16/32/64-bit, acquire and relaxed."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _poll_tensor(flags, out, expected, n, timeout_ns, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    got = tl.atomic_poll(flags + tl.where(m, offs, 0), expected, timeout_ns=timeout_ns)
    tl.store(out + offs, got, mask=m)


@triton.jit
def _poll_scalar(flag, out, expected, SEM: tl.constexpr):
    tl.atomic_poll(flag, expected, sem=SEM)
    tl.store(out, 7)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64])
def test_poll_with_timeout(mps_driver, dtype):
    dev = mps_driver.get_active_torch_device()
    n = 100  # not a multiple of the block
    big = (1 << 40) + 3 if dtype == torch.int64 else 3
    flags = torch.where(torch.rand(n) < 0.5, big, big ^ 1).to(dtype)
    if dtype == torch.int64:
        flags[1] = 3  # equal low half, different high half: not a match
    out = torch.ones(n, dtype=torch.bool, device=dev)
    for timeout in (0, 1000):
        _poll_tensor[(1,)](flags.to(dev), out, big, n, timeout, BLOCK=128)
        assert torch.equal(out.cpu(), flags == big)


@pytest.mark.parametrize("sem", ["acquire", "relaxed"])
@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64])
def test_poll_scalar_returns_when_matched(mps_driver, dtype, sem):
    dev = mps_driver.get_active_torch_device()
    flag = torch.tensor([5], dtype=dtype, device=dev)
    out = torch.zeros(1, dtype=dtype, device=dev)
    _poll_scalar[(3,)](flag, out, 5, SEM=sem)
    assert out.item() == 7
