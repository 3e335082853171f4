"""One torch-tensor binding for both launch paths.

A torch tensor argument binds the same memory, and is refused with the same error, whether a
Triton kernel is launched (the native launcher's fast path) or an MSL `Kernel` is called
(binding.py): both apply `torch_tensor_region` (csrc/python/triton_launch.cpp). Each case
runs the same access on both paths and compares the outcome; error messages are compared
after the argument's name ("kernel 'k': argument 'src'" / "kernel 'k': argument 0").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton_mps import _core, binding


@triton.jit
def read_at(src, dst, shift, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs + shift, mask=mask), mask=mask)


READ_AT = r"""
#include <metal_stdlib>
using namespace metal;
kernel void read_at(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                    constant int& shift [[buffer(2)]], constant uint& n [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  if (i < n) dst[i] = src[int(i) + shift];
}
"""


@pytest.fixture(scope="module")
def device(mps_driver) -> triton_mps.Device:
    dev = triton_mps.get_device()
    if not dev.is_simulator:
        pytest.skip("compares the simulator's memcheck reports (exact per-argument bounds)")
    return dev


@pytest.fixture(scope="module")
def msl(device) -> triton_mps.runtime.Kernel:
    return triton_mps.compile_msl(READ_AT, "read_at", device)


def _outcome(run: Callable[[], Any], device: triton_mps.Device) -> tuple[str, str]:
    """(exception class or 'ok', its message without the kernel's and argument's name, nor
    anything after the access: the line and the buffer's name differ between the paths)."""
    try:
        run()
        device.synchronize()
    except triton_mps.Error as e:
        text = re.sub(r"^kernel '\w+': argument ('\w+'|\d+)", "ARG", str(e))
        text = re.sub(r"^kernel '\w+': ", "", text)
        return type(e).__name__, re.sub(r"(of buffer\(\d+\)).*", r"\1", text, flags=re.S)
    return "ok", ""


def _both(src: torch.Tensor, shift: int, n: int, device, msl) -> tuple[tuple, tuple, np.ndarray, np.ndarray]:
    """Read src[i + shift] for i < n on both paths: (triton outcome, MSL outcome, outputs)."""
    out_t = torch.full((8,), float("nan"))
    out_m = torch.full((8,), float("nan"))
    t = _outcome(lambda: read_at[(1,)](src, out_t, shift, n, BLOCK=8), device)
    m = _outcome(lambda: msl(src, out_m, shift, n, grid=1, threads=8), device)
    return t, m, out_t.numpy(), out_m.numpy()


def test_view_with_offset_binds_its_whole_storage(device, msl):
    base = torch.arange(16, dtype=torch.float32)
    view = base[4:12]  # 16 bytes into its storage
    t, m, out_t, out_m = _both(view, -4, 8, device, msl)  # below data_ptr(), inside the storage
    assert t == m == ("ok", "")
    np.testing.assert_array_equal(out_t, base[:8].numpy())
    np.testing.assert_array_equal(out_m, base[:8].numpy())
    t, m, _, _ = _both(view, 8, 8, device, msl)  # base[12:20]: past the storage's end
    assert t == m, (t, m)
    assert t[0] == "DispatchError" and "out-of-bounds load of 4 bytes past the end of buffer(0)" in t[1], t
    buf = binding.bind(view, device, "the view")
    assert (buf.offset, buf.nbytes) == (16, 48)
    assert _core.torch_tensor_region(view, device, "the view") == ("host", base.data_ptr(), 64, 16)


@pytest.mark.parametrize("make", [lambda x: x[x.numel():], lambda x: x[2:2], lambda x: x.new_ones(0)],
                         ids=["x[8:]", "x[2:2]", "new_ones(0)"])
def test_zero_element_tensor_binds_nothing(device, msl, make):
    empty = make(torch.arange(8, dtype=torch.float32))
    assert empty.numel() == 0
    assert _core.torch_tensor_region(empty, device, "the view")[0] == "empty"
    t, m, _, _ = _both(empty, 0, 0, device, msl)  # nothing read: fine
    assert t == m == ("ok", "")
    t, m, _, _ = _both(empty, 0, 1, device, msl)  # one element read: memcheck names the argument
    assert t == m, (t, m)
    assert t == ("DispatchError", "out-of-bounds load of 4 bytes past the end of buffer(0)"), t


class _Liar(torch.Tensor):
    """A tensor whose data_ptr() lies outside its storage (torch itself never gives one with elements)."""

    def data_ptr(self) -> int:  # noqa: D102
        return 64


def test_tensor_with_elements_outside_its_storage_is_refused(device, msl):
    liar = torch.arange(8, dtype=torch.float32).as_subclass(_Liar)
    t, m, _, _ = _both(liar, 0, 8, device, msl)
    assert t == m, (t, m)
    assert t[0] == "InvalidArgument", t
    assert re.fullmatch(r"ARG: data_ptr\(\) 0x40 is outside the tensor's storage \[0x[0-9a-f]+, 0x[0-9a-f]+\), "
                        r"and the tensor has 8 elements \(only a tensor without elements may point elsewhere\)",
                        t[1]), t


def test_meta_tensor_is_refused(device, msl):
    t, m, _, _ = _both(torch.empty(8, device="meta"), 0, 8, device, msl)
    assert t == m == ("InvalidArgument", "ARG is a tensor on device 'meta'; the simulator takes CPU tensors"), (t, m)


def test_region_errors_name_the_argument(device):
    with pytest.raises(triton_mps.InvalidArgument, match=r"^as_buffer\(\): the array is a tensor on device 'meta'"):
        triton_mps.as_buffer(torch.empty(2, device="meta"), device)
