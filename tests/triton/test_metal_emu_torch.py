"""The torch `mps` path of the Triton launcher, on the emulated Metal device (Linux builds).

`FakeMpsTensor` stands in for a torch `mps` tensor: it exposes exactly what the launcher reads
(is_cpu/is_mps, its storage's data_ptr() = the MTLBuffer handle and nbytes(), storage_offset(),
element_size(), shape, strides, dtype). Its buffer is an emulated MTLBuffer (private storage, as
PyTorch allocates); when the tensor dies, a stand-in for PyTorch's caching allocator hands the
buffer to "the next tensor", which overwrites it at once.
"""

from __future__ import annotations

import ctypes
import gc
import weakref
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import triton_mps
from triton_mps import _core
from triton_mps.compiler.abi import ArgInfo, CompiledMSL

pytestmark = pytest.mark.skipif(not hasattr(_core, "emu_stats"), reason="built without the emulated Metal device")

ADD1 = """#include <metal_stdlib>
using namespace metal;
kernel void add1(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (int(i) < n) y[i] = x[i] + 1.0f;
}
"""
SIGNATURE = {"x": "*fp32", "y": "*fp32", "n": "i32"}
ARGS = [
    ArgInfo("x", "pointer", "float", 0, 0),
    ArgInfo("y", "pointer", "float", 1, 1),
    ArgInfo("n", "scalar", "int", 2, 2),
]
Metadata = namedtuple("Metadata", "name num_warps warp_size shared tmps_args num_ctas")


def _memory(handle: int, count: int) -> np.ndarray:
    """The floats behind an emulated MTLBuffer (also for private storage: the test's back door)."""
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(_core.emu_buffer_memory(handle)))


class FakeMpsStorage:
    def __init__(self, handle: int, nbytes: int):
        self._handle, self._nbytes = handle, nbytes

    def data_ptr(self) -> int:
        return self._handle  # on MPS the storage pointer is the MTLBuffer handle

    def nbytes(self) -> int:
        return self._nbytes


class FakeMpsTensor(torch.Tensor):
    """A float32 1-d `mps` tensor stand-in over a fresh emulated MTLBuffer."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, values: np.ndarray, offset: int = 0):
        t = torch.Tensor._make_subclass(cls, torch.empty(len(values), dtype=torch.float32))
        capacity = len(values) + offset
        t._handle = _core.emu_new_buffer(capacity * 4, True)  # private storage, as PyTorch allocates
        t._offset = offset
        t._capacity = capacity
        _memory(t._handle, capacity)[offset:] = values
        # PyTorch's caching allocator: the buffer goes to the next tensor, which overwrites it.
        weakref.finalize(t, FakeMpsTensor._reuse, t._handle, capacity)
        return t

    @staticmethod
    def _reuse(handle: int, capacity: int) -> None:
        _memory(handle, capacity)[:] = np.float32(-777.0)
        _core.emu_release(handle)

    is_cpu = property(lambda self: False)
    is_mps = property(lambda self: True)
    device = property(lambda self: SimpleNamespace(type="mps", __str__=lambda: "mps:0"))

    def untyped_storage(self) -> FakeMpsStorage:
        return FakeMpsStorage(self._handle, self._capacity * 4)

    def storage_offset(self) -> int:
        return self._offset

    def read(self) -> np.ndarray:
        return _memory(self._handle, self._capacity)[self._offset :].copy()


@pytest.fixture
def emu_launcher(mps_driver, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_LAUNCH_SYNC", "0")  # the launch returns before the kernel ran
    index = next(i for i, d in enumerate(triton_mps.devices()) if d.is_emulated)
    compiled = CompiledMSL(msl=ADD1, name="add1", num_warps=4, shared=0, args=ARGS)
    meta = Metadata("add1", 4, 32, 0, compiled.to_metadata(), 1)
    src = SimpleNamespace(signature=SIGNATURE, fn=SimpleNamespace(arg_names=list(SIGNATURE)))
    _, function, *_ = mps_driver.utils.load_binary("add1", ADD1.encode(), 0, index)
    launcher = mps_driver.launcher_cls(src, meta)

    def run(n, *args):
        launcher((n + 127) // 128, 1, 1, 0, function, (4, 1, 0), None, None, None, *args)

    yield run, triton_mps.devices()[index]
    _core.emu_hold_queues(False)


def test_mps_tensors_with_storage_offset(emu_launcher, rng):
    run, dev = emu_launcher
    values = rng.standard_normal(1000).astype(np.float32)
    x = FakeMpsTensor(values, offset=24)
    y = FakeMpsTensor(np.full(1000, np.nan, np.float32), offset=8)
    run(1000, x, y, 1000)
    dev.synchronize()
    np.testing.assert_array_equal(y.read(), values + 1)


def test_mps_tensor_kept_alive_until_the_kernel_completed(emu_launcher, rng):
    # Finding 3: only the MTLBuffer was retained; once the tensor died PyTorch's allocator could
    # give the buffer to a new tensor while our kernel still read it.
    run, dev = emu_launcher
    values = rng.standard_normal(1000).astype(np.float32)
    y = FakeMpsTensor(np.full(1000, np.nan, np.float32))
    _core.emu_hold_queues(True)  # the GPU has not started yet
    x = FakeMpsTensor(values)
    run(1000, x, y, 1000)
    del x
    gc.collect()  # without the fix the stand-in allocator overwrites x's buffer here
    _core.emu_hold_queues(False)
    dev.synchronize()
    np.testing.assert_array_equal(y.read(), values + 1)
