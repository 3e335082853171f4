"""Host `TensorDescriptor` arguments and `keep_dims` reductions through `kernel[grid](...)`.

A host descriptor reaches the kernel decomposed (Triton's `decompose_descriptor`: base, shape,
strides, padding and tf32 flags, shape and strides again); the compiler and the launcher expand
the `tensordesc<...>` signature entry into those leaves the same way (compiler.descriptor_leaves).
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def scale_tiles(x_desc, y_desc, alpha, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    tile = x_desc.load([m, n])  # rows/columns past the tensor read as 0 (or NaN: padding="nan")
    y_desc.store([m, n], tile * alpha)  # and are not stored


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_host_descriptors_2d_edges(mps_driver, rng, padding):
    dev = mps_driver.get_active_torch_device()
    M, N, BM, BN = 37, 52, 16, 32  # neither a multiple of the block (rows stay 16-byte aligned)
    x = torch.from_numpy(rng.standard_normal((M, N), dtype="float32")).to(dev)
    y = torch.full((M, N), float("nan"), device=dev)
    x_desc = TensorDescriptor.from_tensor(x, block_shape=[BM, BN], padding=padding)
    y_desc = TensorDescriptor.from_tensor(y, block_shape=[BM, BN])
    scale_tiles[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x_desc, y_desc, 1.5, BM=BM, BN=BN)
    torch.testing.assert_close(y, x * 1.5, rtol=0, atol=0)


@triton.jit
def first_row_with_padding(x_desc, out, BM: tl.constexpr, BN: tl.constexpr):
    tile = x_desc.load([0, 0])
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    tl.store(out + r[:, None] * BN + c[None, :], tile)


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_host_descriptor_padding_value(mps_driver, rng, padding):
    dev = mps_driver.get_active_torch_device()
    x = torch.from_numpy(rng.standard_normal((3, 8), dtype="float32")).to(dev)
    out = torch.full((4, 16), -7.0, device=dev)
    first_row_with_padding[(1,)](TensorDescriptor.from_tensor(x, block_shape=[4, 16], padding=padding), out,
                                 BM=4, BN=16)
    pad = float("nan") if padding == "nan" else 0.0
    want = torch.full((4, 16), pad)
    want[:3, :8] = x.cpu()
    torch.testing.assert_close(out.cpu(), want, rtol=0, atol=0, equal_nan=True)


@triton.jit
def max_keep_dims(x, z, AXIS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    v = tl.load(x + r[:, None] * BN + c[None, :])
    m = tl.max(v, axis=AXIS, keep_dims=True)
    if AXIS is None:  # shape [1, 1]
        tl.store(z + tl.zeros([1, 1], tl.int32), m)
    elif AXIS == 0:  # shape [1, BN]
        tl.store(z + c[None, :], m)
    else:  # shape [BM, 1]
        tl.store(z + r[:, None], m)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_keep_dims_reductions(mps_driver, rng, axis):
    dev = mps_driver.get_active_torch_device()
    x = torch.from_numpy(rng.standard_normal((16, 32), dtype="float32")).to(dev)
    n = 1 if axis is None else (32 if axis == 0 else 16)
    z = torch.full((n,), float("nan"), device=dev)
    max_keep_dims[(1,)](x, z, AXIS=axis, BM=16, BN=32)
    want = x.max() if axis is None else x.max(dim=axis).values
    torch.testing.assert_close(z.cpu().reshape(-1), want.cpu().reshape(-1), rtol=0, atol=0)
