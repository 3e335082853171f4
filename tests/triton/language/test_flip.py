"""tl.flip over every axis of 3-D blocks, including size-1 axes and more warps than the block
needs. tl.flip reshapes to (2, 2, ..., 2) and XOR-reduces: the reduced tensors carry linear
layouts on shapes smaller than the layout's span, which compiler/linear_layouts.py must shrink as
Triton does (lane/warp bases past the shape zeroed). Found by upstream test_standard.py::test_flip
(1,008 of 1,024 elements wrong at 128x8x1 with 8 warps)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def flip_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, dim: tl.constexpr):
    offs = (tl.arange(0, M)[:, None, None] * N * K + tl.arange(0, N)[None, :, None] * K
            + tl.arange(0, K)[None, None, :])
    tl.store(Z + offs, tl.flip(tl.load(X + offs), dim))


@pytest.mark.parametrize("M, N, K", [(128, 8, 1), (8, 2, 256), (32, 1, 2), (1, 16, 64)])
@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_flip(mps_driver, M, N, K, dim, dtype):
    dev = mps_driver.get_active_torch_device()
    x = (torch.randn(M, N, K) * 100).to(dtype)
    z = torch.full_like(x, -7).to(dev)  # poison
    flip_kernel[(1, )](x.to(dev), z, M, N, K, dim, num_warps=8)
    assert torch.equal(z.cpu(), torch.flip(x, (dim, )))
