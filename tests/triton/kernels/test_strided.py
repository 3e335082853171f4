"""kernels.strided on non-contiguous torch views through kernel[grid](...); copies are exact."""

from __future__ import annotations

import pytest
import torch
from kernels_testing import poisoned_tensor, seeded_generator, torch_device

from kernels import strided


def make(shape, dtype, gen, dev):
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype).to(dev)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -2**62), min(info.max, 2**62)
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64).to(dtype).to(dev)


def views(base):
    """Non-contiguous 2-D views of a 3-D base tensor, by name."""
    return {
        "sliced": base[1, 3:40:3, 2:],           # row stride, column step 1, offset start
        "transposed": base[2].t()[5:, ::2],       # column-major with a step
        "expanded": base[0, 4, :29].expand(17, 29),  # row stride 0: every row is the same memory
    }


@pytest.mark.parametrize("dtype", strided.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_copy2d_views(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    base = make((3, 45, 31), dtype, gen, dev)
    for name, src in views(base).items():
        backing = poisoned_tensor((src.shape[1] + 3, src.shape[0] * 2), dtype, dev)
        dst = backing[3:, ::2].t()  # a transposed, column-stepped destination
        assert dst.shape == src.shape, name
        untouched = backing.clone()
        strided.copy2d(src, dst, block=(16, 32), num_warps=num_warps)
        assert torch.equal(dst, strided.copy2d_reference(src)), f"{name} view copied wrong"
        # Memory outside the destination view must still hold the poison.
        outside = torch.ones_like(backing, dtype=torch.bool)
        outside[3:, ::2] = False
        # (compared as bytes: NaN poison is not equal to itself)
        assert torch.equal(backing[outside].view(torch.uint8), untouched[outside].view(torch.uint8)), \
            f"{name}: wrote outside the destination view"


@pytest.mark.parametrize("dtype", strided.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_transpose(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    src = make((37, 50), dtype, gen, dev)
    dst = poisoned_tensor((50, 37), dtype, dev)
    strided.transpose(src, dst, block=(16, 32), num_warps=num_warps)
    assert torch.equal(dst, strided.transpose_reference(src))


def test_transpose_of_views(mps_driver, rng):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    base = make((3, 45, 31), torch.float32, gen, dev)
    for name, src in views(base).items():
        out = strided.transpose(src, block=(32, 16), num_warps=2)
        assert torch.equal(out, strided.transpose_reference(src)), name
        dst = poisoned_tensor((src.shape[0], src.shape[1]), torch.float32, dev).t()  # column-major dst
        strided.transpose(src, dst, num_warps=1)
        assert torch.equal(dst, strided.transpose_reference(src)), f"{name} into a column-major dst"


def test_mismatched_shapes_raise(mps_driver):
    with pytest.raises(ValueError, match="do not match"):
        strided.copy2d(torch.zeros(3, 4), torch.zeros(4, 3))
