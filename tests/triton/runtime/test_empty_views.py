"""Zero-element views as kernel arguments.

torch gives a zero-element view (`x[8:]` of 8 elements, `x[2:2]`) a data_ptr() of 0, outside
its storage. Nothing can be addressed through it, so it binds like an empty tensor instead of
failing the launch (Inductor's kernel for torch.cat([x, x.new_ones(0)]) passes one).
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def copy_masked(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("make", [lambda x: x[x.numel():], lambda x: x[2:2], lambda x: x.new_ones(0)])
def test_zero_element_view_with_empty_grid(mps_driver, make):
    x = torch.randn(8, device=mps_driver.get_active_torch_device())
    empty = make(x)
    assert empty.numel() == 0
    copy_masked[(0,)](empty, empty, 0, BLOCK=64)  # Triton's CUDA launcher skips an empty grid too


def test_zero_element_view_beside_real_tensors(mps_driver):
    dev = mps_driver.get_active_torch_device()
    x = torch.randn(100, device=dev)
    out = torch.full((100,), float("nan"), device=dev)
    empty = x[100:]
    assert empty.data_ptr() == 0 or not (
        x.untyped_storage().data_ptr() <= empty.data_ptr() <= x.untyped_storage().data_ptr() + 400
    )
    copy_masked[(1,)](empty, out, 0, BLOCK=128)  # every lane masked: nothing read
    assert torch.isnan(out).all()
    copy_masked[(1,)](x, out, 100, BLOCK=128)
    torch.testing.assert_close(out, x)


def test_nonempty_tensor_outside_storage_is_still_refused(mps_driver):
    x = torch.randn(8, device=mps_driver.get_active_torch_device())
    bad = torch.Tensor._make_subclass(torch.Tensor, x)

    class Liar(torch.Tensor):
        def data_ptr(self):  # noqa: D102
            return 64

    liar = bad.as_subclass(Liar)
    with pytest.raises(Exception, match="outside the tensor's storage"):
        copy_masked[(1,)](liar, x, 8, BLOCK=64)
