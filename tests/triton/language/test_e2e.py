"""End to end with the real TTGIR -> MSL compiler (triton_mps.compiler.compile_ttgir).

No stand-in here: these fail until the compiler exists, and then test it through the plugin.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def axpy(x_ptr, y_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, alpha * tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def device(mps_driver):
    return mps_driver.get_active_torch_device()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_vector_add(mps_driver, dtype, num_warps, n):
    dev = device(mps_driver)
    x = torch.randn(n, dtype=dtype, device=dev)
    y = torch.randn(n, dtype=dtype, device=dev)
    out = torch.full((n,), float("nan"), dtype=dtype, device=dev)
    block = 256
    k = vector_add[(triton.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block, num_warps=num_warps)
    torch.testing.assert_close(out, x + y)
    assert k.metadata.num_warps == num_warps
    assert {"ttir", "ttgir", "msl"} <= set(k.asm)


def test_scalar_argument_and_grid_lambda(mps_driver):
    dev = device(mps_driver)
    n = 777
    x = torch.randn(n, device=dev)
    y = torch.randn(n, device=dev)
    expected = 2.5 * x + y
    axpy[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, n, 2.5, BLOCK_SIZE=128)
    torch.testing.assert_close(y, expected)


def test_empty_input_launches_nothing(mps_driver):
    dev = device(mps_driver)
    x = torch.empty(0, device=dev)
    vector_add[(0,)](x, x, x, 0, BLOCK_SIZE=64)
