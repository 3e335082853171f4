"""Fused multiply-add with a negated operand that is itself a negative literal.

`x*y - c` lowers to fma(x, y, -c) and `c - x*y` to fma(-x, y, c); a bare '-' prefix before a
negative literal spelled `--3.75f` (a decrement, which Metal and the simulator reject). Found by
PyTorch Inductor's generated kernels (`x*y - c` with a negative constant).
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def mul_sub_const(x_ptr, y_ptr, out_ptr, n, C: tl.constexpr, SWAP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if SWAP:
        r = C - x * y  # fma(-x, y, C)
    else:
        r = x * y - C  # fma(x, y, -C)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def neg_const_times(y_ptr, out_ptr, n, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 1.5 - C * y, mask=mask)  # fma(-C, y, 1.5) with C a negative literal


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("c", [-3.75, 2.5])
@pytest.mark.parametrize("swap", [False, True])
def test_mul_sub_constant(mps_driver, dtype, c, swap):
    dev = mps_driver.get_active_torch_device()
    n = 1000  # not a multiple of the block
    x = torch.randn(n, dtype=dtype, device=dev)
    y = torch.randn(n, dtype=dtype, device=dev)
    out = torch.full((n,), float("nan"), dtype=dtype, device=dev)
    k = mul_sub_const[(triton.cdiv(n, 256),)](x, y, out, n, C=c, SWAP=swap, BLOCK=256)
    xd, yd = x.double(), y.double()
    ref = (c - xd * yd) if swap else (xd * yd - c)
    tol = 1e-2 if dtype == torch.float16 else 1e-6
    torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol)
    assert "--" not in k.asm["msl"].split("kernel void", 1)[1]


def test_negative_literal_as_negated_factor(mps_driver):
    dev = mps_driver.get_active_torch_device()
    n = 777
    y = torch.randn(n, device=dev)
    out = torch.full((n,), float("nan"), device=dev)
    neg_const_times[(triton.cdiv(n, 128),)](y, out, n, C=-2.25, BLOCK=128)
    torch.testing.assert_close(out.double(), 1.5 + 2.25 * y.double(), rtol=1e-6, atol=1e-6)
