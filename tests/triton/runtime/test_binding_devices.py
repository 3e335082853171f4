"""Kernel arguments and driver queries that upstream Triton tests and common user code use
(issue 7): triton.reinterpret(...) tensors and other data_ptr() objects bound with their size,
and a device index of None meaning the current device."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_plus_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@pytest.mark.parametrize("torch_dtype,tl_dtype", [(torch.int8, tl.uint8), (torch.int16, tl.uint16),
                                                  (torch.int32, tl.uint32), (torch.int64, tl.uint64)])
def test_reinterpret_unsigned(mps_driver, torch_dtype, tl_dtype):
    """upstream's to_triton() wraps every unsigned tensor as triton.reinterpret(signed, unsigned)."""
    dev = mps_driver.get_active_torch_device()
    n = 777
    info = torch.iinfo(torch_dtype)
    x = torch.randint(info.min, info.max, (n,), dtype=torch_dtype, device=dev)
    out = torch.full((n,), 7, dtype=torch_dtype, device=dev)
    _copy_plus_one[(triton.cdiv(n, 128),)](triton.reinterpret(x, tl_dtype), triton.reinterpret(out, tl_dtype), n,
                                           BLOCK=128)
    bits = torch.iinfo(torch_dtype).bits
    expect = ((x.to(torch.int64) + 1) & ((1 << bits) - 1)) if bits < 64 else x + 1
    assert torch.equal(out.to(torch.int64) & ((1 << bits) - 1) if bits < 64 else out, expect)


def test_reinterpret_of_a_view(mps_driver):
    """The wrapper of a view binds the view's own memory (offset into the storage)."""
    dev = mps_driver.get_active_torch_device()
    base = torch.arange(300, dtype=torch.int32, device=dev)
    x = base[37:237]
    out = torch.zeros(200, dtype=torch.int32, device=dev)
    _copy_plus_one[(2,)](triton.reinterpret(x, tl.uint32), out, 200, BLOCK=128)
    assert torch.equal(out, x + 1)


class _Raw:
    """A minimal data_ptr() object with a dtype and a shape but no nbytes."""

    def __init__(self, t):
        self.t, self.dtype, self.shape = t, t.dtype, t.shape

    def data_ptr(self):
        return self.t.data_ptr()


def test_data_ptr_object_with_dtype(mps_driver):
    dev = mps_driver.get_active_torch_device()
    if dev.type != "cpu":
        pytest.skip("a raw data_ptr() is an address only for CPU memory (the simulator)")
    x = torch.randn(1000, device=dev)
    out = torch.full((1000,), float("nan"), device=dev)
    # On Metal too: host memory is wrapped (in whole pages) as numpy arrays are.
    _copy_plus_one[(8,)](_Raw(x), _Raw(out), 1000, BLOCK=128)
    torch.testing.assert_close(out, x + 1)


def test_device_index_none_is_current(mps_driver):
    cur = mps_driver.get_current_device()
    want = mps_driver.utils.get_device_properties(cur)
    assert mps_driver.utils.get_device_properties(None) == want
    assert mps_driver.utils.get_device_properties(torch.device("cpu").index) == want
    assert mps_driver.utils.get_device_properties(torch.device("cpu")) == want
    assert triton.runtime.driver.active.utils.get_device_properties(torch.device("cpu").index) == want
    mps_driver.get_device_interface().synchronize(None)
    mps_driver.set_current_device(None)
    assert mps_driver.get_current_device() == cur
