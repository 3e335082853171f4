"""Pointer arguments that are views: memcheck bounds are the memory they view, not data_ptr() upwards.

Operator libraries pass strided views as plain objects with data_ptr(), shape and stride(); with a
negative stride data_ptr() is the view's last element in memory and the kernel reads downwards.
The launcher binds what the object addresses (its storage, its base's, else its strides' extent)
with the kernel's pointer at data_ptr(), so memcheck (on by default) allows those reads, on the
simulator and the emulated Metal device alike, and still stops a real out-of-bounds access.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton_mps


@triton.jit
def gather_strided(src, stride, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs * stride, mask=mask), mask=mask)


class View:
    """A strided view as operator libraries pass it: data_ptr(), shape, stride() and dtype only,
    plus untyped_storage() when `storage` is given."""

    def __init__(self, t: torch.Tensor, offset: int, shape: tuple[int, ...], stride: tuple[int, ...],
                 storage: bool = False) -> None:
        self._t, self._ptr = t, t.data_ptr() + offset * t.element_size()
        self.shape, self._stride, self.dtype = shape, stride, t.dtype
        if storage:
            self.untyped_storage = t.untyped_storage

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._stride


@pytest.mark.parametrize("storage", [False, True], ids=["strides", "storage"])
def test_negative_stride_view_reads_downwards_exactly(mps_driver, storage):
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(16, dtype=torch.float32, device=dev)
    view = View(x, 15, (8,), (-2,), storage=storage)  # x[15], x[13], ..., x[1]: 56 bytes below data_ptr()
    out = torch.full((8,), -1.0, device=dev)
    gather_strided[(1,)](view, -2, out, 8, BLOCK=8)
    torch.testing.assert_close(out.cpu(), x.cpu().flip(0)[::2])


def test_torch_view_read_below_its_data_ptr(mps_driver):
    """A kernel may address any byte of the tensor's storage, as on CUDA: x[4:] read at index -1."""
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(16, dtype=torch.float32, device=dev)
    out = torch.full((4,), -1.0, device=dev)
    gather_strided[(1,)](x[4:], -1, out, 4, BLOCK=4)
    torch.testing.assert_close(out.cpu(), torch.tensor([4.0, 3.0, 2.0, 1.0]))


def test_negative_stride_view_past_its_memory_is_still_out_of_bounds(mps_driver):
    if mps_driver.config["is_emulated"]:
        pytest.skip("Metal wraps host memory in whole pages, so a read just below the view stays inside its MTLBuffer")
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(16, dtype=torch.float32, device=dev)
    view = View(x[8:].clone(), 7, (8,), (-1,))  # its own 8 floats, read downwards from the last
    out = torch.full((16,), -1.0, device=dev)
    want = r"load of 4 bytes before buffer\(0\) .*32 bytes\) at byte offset -32 \(element -8\)"
    with pytest.raises(triton_mps.DispatchError, match=want):
        gather_strided[(1,)](view, -1, out, 9, BLOCK=16)  # the 9th read is one element below



def test_reinterpret_view_read_below_its_data_ptr(mps_driver):
    """triton.reinterpret wraps a view: it binds the storage of the tensor it wraps, as the view would."""
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(16, dtype=torch.int32, device=dev)
    out = torch.full((4,), -1, dtype=torch.int32, device=dev)
    gather_strided[(1,)](triton.reinterpret(x[4:], tl.float32), -1, triton.reinterpret(out, tl.float32), 4, BLOCK=4)
    torch.testing.assert_close(out.cpu(), torch.tensor([4, 3, 2, 1], dtype=torch.int32))
