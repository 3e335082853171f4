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


def make_launcher(mps_driver):
    """The add1 launcher on the emulated device: (run(n, x, y, n), device)."""
    index = next(i for i, d in enumerate(triton_mps.devices()) if d.is_emulated)
    compiled = CompiledMSL(msl=ADD1, name="add1", num_warps=4, shared=0, args=ARGS)
    meta = Metadata("add1", 4, 32, 0, compiled.to_metadata(), 1)
    src = SimpleNamespace(signature=SIGNATURE, fn=SimpleNamespace(arg_names=list(SIGNATURE)))
    _, function, *_ = mps_driver.utils.load_binary("add1", ADD1.encode(), 0, index)
    launcher = mps_driver.launcher_cls(src, meta)

    def run(n, *args):
        launcher((n + 127) // 128, 1, 1, 0, function, (4, 1, 0), None, None, None, *args)

    return run, triton_mps.devices()[index]


@pytest.fixture
def emu_launcher(mps_driver, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_LAUNCH_SYNC", "0")  # the launch returns before the kernel ran
    yield make_launcher(mps_driver)
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


@pytest.fixture
def fake_torch_stream(emu_launcher, monkeypatch):
    """PyTorch's MPS stream on the emulated device: csrc/metal/torch_stream.cpp over a fake
    torch/mps.h API (csrc/metal_emu/emu_hooks.cpp) that records what is done to it."""
    monkeypatch.delenv("TRITON_MPS_LAUNCH_SYNC")  # the default: launches on PyTorch's stream do not wait
    run, dev = emu_launcher
    _core.emu_attach_fake_torch(dev)
    _core.emu_fake_torch_events()
    yield run, dev
    _core.emu_hold_queues(False)  # a failed test may leave the GPU held: detaching waits for it
    _core.detach_foreign_stream(dev)
    _core.emu_fake_torch_events()


def test_mps_launch_is_encoded_on_torchs_stream_without_waiting(fake_torch_stream, mps_driver, rng):
    run, dev = fake_torch_stream
    # A fresh launcher: the default wait is read when the launcher is made.
    values = rng.standard_normal(1000).astype(np.float32)
    x = FakeMpsTensor(values, offset=3)
    y = FakeMpsTensor(np.full(1000, np.nan, np.float32))
    _core.emu_fake_torch_op("before")
    _core.emu_hold_queues(True)  # the GPU has not started: a launch that waited would hang here
    run(1000, x, y, 1000)
    _core.emu_fake_torch_op("after")  # PyTorch's next op: our encoder must be closed by now
    # PyTorch's open encoder is ended and its command buffer fetched on its queue (issue 18 item 1).
    assert _core.emu_fake_torch_events() == [
        "op before", "queue", "endKernelCoalescing", "get_command_buffer", "op after"]
    assert np.isnan(y.read()).all()
    before = _core.emu_stats()["command_buffers_committed"]
    _core.emu_hold_queues(False)
    dev.synchronize()  # triton_mps.synchronize(): torch::mps::synchronize() through the stream
    assert _core.emu_fake_torch_events() == ["synchronize"]
    # One command buffer holds PyTorch's two ops and our dispatch.
    assert _core.emu_stats()["command_buffers_committed"] == before + 1
    np.testing.assert_array_equal(y.read(), values + 1)
    assert _core.emu_violations() == []


def test_torch_stream_keeps_tensors_alive_and_commits_every_n(fake_torch_stream, rng):
    run, dev = fake_torch_stream
    _core.set_foreign_commit_every(dev, 2)
    try:
        values = rng.standard_normal(500).astype(np.float32)
        y = FakeMpsTensor(np.full(500, np.nan, np.float32))
        _core.emu_hold_queues(True)
        for _ in range(2):
            x = FakeMpsTensor(values)
            run(500, x, y, 500)
            del x  # the stand-in allocator would overwrite its buffer if we did not hold it
            gc.collect()
        assert _core.emu_fake_torch_events() == ["queue", "endKernelCoalescing", "get_command_buffer"] * 2 + [
            "queue", "commit"]
        _core.emu_hold_queues(False)
        dev.synchronize()
        np.testing.assert_array_equal(y.read(), values + 1)
        assert _core.emu_violations() == []
    finally:
        _core.set_foreign_commit_every(dev, 64)


def test_profiled_launch_on_torchs_stream_has_its_own_command_buffer(fake_torch_stream, rng):
    run, dev = fake_torch_stream
    values = rng.standard_normal(300).astype(np.float32)
    x, y = FakeMpsTensor(values), FakeMpsTensor(np.full(300, np.nan, np.float32))
    with triton_mps.profile() as prof:
        run(300, x, y, 300)
        assert _core.emu_fake_torch_events() == [
            "queue", "commit", "queue", "endKernelCoalescing", "get_command_buffer", "queue", "commit"]
    (rec,) = prof.records
    assert rec.stream == "foreign" and rec.device_us is not None and rec.device_us >= 0 and not rec.error
    np.testing.assert_array_equal(y.read(), values + 1)
    assert _core.emu_violations() == []


def test_runtime_api_mps_launch_is_encoded_on_torchs_stream(fake_torch_stream, rng):
    # Issue 18 item 4: the MSL runtime API ran `mps` tensors on our own queue, unordered with
    # PyTorch's ops (its kernel could read a tensor before PyTorch's op writing it ran).
    _, dev = fake_torch_stream
    k = triton_mps.compile_msl(ADD1, "add1", dev)
    values = rng.standard_normal(700).astype(np.float32)
    x, y = FakeMpsTensor(values, offset=5), FakeMpsTensor(np.full(700, np.nan, np.float32))
    _core.emu_fake_torch_op("before")
    _core.emu_hold_queues(True)
    k(x, y, 700, grid=6, threads=128)
    _core.emu_fake_torch_op("after")
    assert _core.emu_fake_torch_events() == ["op before", "queue", "endKernelCoalescing", "get_command_buffer",
                                             "op after"]
    _core.emu_hold_queues(False)
    dev.synchronize()
    assert _core.emu_fake_torch_events() == ["synchronize"]
    np.testing.assert_array_equal(y.read(), values + 1)


def test_runtime_api_mps_launch_without_torchs_stream_synchronizes_torch_first(emu_launcher, monkeypatch, rng):
    # A torch without torch/mps.h's API: our own queue, after PyTorch finished what it issued.
    _, dev = emu_launcher
    calls = []
    monkeypatch.setattr(triton_mps.runtime, "_synchronize_torch_mps", lambda: calls.append("torch.mps.synchronize"))
    k = triton_mps.compile_msl(ADD1, "add1", dev)
    values = rng.standard_normal(300).astype(np.float32)
    x, y = FakeMpsTensor(values), FakeMpsTensor(np.full(300, np.nan, np.float32))
    k(x, y, 300, grid=3, threads=128)
    assert calls == ["torch.mps.synchronize"]
    k(np.zeros(300, np.float32), np.zeros(300, np.float32), 300, grid=3, threads=128)  # no `mps` tensor: no call
    dev.synchronize()
    assert calls == ["torch.mps.synchronize"]
    np.testing.assert_array_equal(y.read(), values + 1)


@pytest.fixture(params=[8, 9], ids=["torch2.8", "torch2.9"])
def torch_version(request):
    """The fake PyTorch behaves as torch 2.8 (get_command_buffer leaves the coalesced encoder open)
    or 2.9 and later (it ends it: MPSHooks::getCommandBuffer in the 2.9.0 macOS wheel, PyTorch PR
    #164093)."""
    _core.emu_clear_violations()
    _core.emu_fake_torch_set_version(request.param)
    yield request.param
    _core.emu_fake_torch_set_version(8)
    _core.emu_clear_violations()


def test_launch_after_a_torch_op_that_left_its_encoder_open(fake_torch_stream, torch_version, rng):
    # Issue 18 item 1: a native op (torch.sin, indexing) leaves PyTorch's compute encoder open;
    # before torch 2.9 get_command_buffer does not end it, and a second encoder aborts on a Mac.
    # get_command_buffer must also be called on PyTorch's queue (both versions).
    run, dev = fake_torch_stream
    values = rng.standard_normal(1000).astype(np.float32)
    x = FakeMpsTensor(values, offset=4)
    y = FakeMpsTensor(np.full(1000, np.nan, np.float32))
    _core.emu_fake_torch_op("x*2", x._handle, 16, 1000, 2.0, 0.0)  # x *= 2, encoder left open
    run(1000, x, y, 1000)  # y = x + 1
    _core.emu_fake_torch_op("y*3", y._handle, 0, 1000, 3.0, 0.0)  # y *= 3, after our dispatch
    assert _core.emu_fake_torch_events() == [
        "op x*2", "queue", "endKernelCoalescing", "get_command_buffer", "op y*3"]
    dev.synchronize()
    np.testing.assert_array_equal(y.read(), (values * np.float32(2) + np.float32(1)) * np.float32(3))
    assert _core.emu_violations() == []


TORCH_SYNC_CHILD = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from triton_mps import _core
from triton_mps.backend.driver import MPSDriver
from test_metal_emu_torch import FakeMpsTensor, make_launcher

run, dev = make_launcher(MPSDriver())
_core.emu_attach_fake_torch(dev)
_core.emu_fake_torch_set_version(int(sys.argv[2]))
values = np.linspace(-3, 3, 777, dtype=np.float32)
x = FakeMpsTensor(values)
_core.emu_fake_torch_op("sin", x._handle, 0, 777, 2.0, 0.0)  # PyTorch's op: x *= 2, encoder left open
y = FakeMpsTensor(np.full(777, np.nan, np.float32))
run(777, x, y, 777)  # y = x + 1 on PyTorch's command buffer
del x  # now only our completion handler holds it
_core.emu_fake_torch_synchronize()  # torch.mps.synchronize(): waits with the GIL held
got = y.read()
assert np.array_equal(got, values * np.float32(2) + np.float32(1)), got[:4]
assert _core.emu_violations() == [], _core.emu_violations()
print("ok")
"""


@pytest.mark.parametrize("minor", [8, 9], ids=["torch2.8", "torch2.9"])
def test_torch_op_launch_synchronize_read(minor):
    # Issue 18 items 1 and 2: torch.sin(x), a launch on the same tensor, torch.mps.synchronize(),
    # a read. The synchronize waits for the command buffer holding the GIL, and Metal's wait
    # returns only after the completed handlers returned: a handler that takes the GIL (to drop
    # the tensor it kept alive) deadlocks. A child process, so that a hang fails the test.
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_MPS_LAUNCH_SYNC"}
    try:
        r = subprocess.run([sys.executable, "-c", TORCH_SYNC_CHILD, here, str(minor)], env=env,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("torch.mps.synchronize() after a launch on PyTorch's stream hung (deadlock)")
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]


def test_without_aten_symbols_commit_ends_torchs_encoder(fake_torch_stream, rng):
    # A libtorch that does not export MPSStream::endKernelCoalescing: torch::mps::commit() ends
    # PyTorch's open encoder instead (then commits), still on PyTorch's queue.
    run, dev = fake_torch_stream
    _core.emu_clear_violations()
    _core.emu_attach_fake_torch(dev, aten_symbols=False)
    values = rng.standard_normal(300).astype(np.float32)
    x, y = FakeMpsTensor(values), FakeMpsTensor(np.full(300, np.nan, np.float32))
    _core.emu_fake_torch_op("x+5", x._handle, 0, 300, 1.0, 5.0)  # torch 2.8: encoder left open
    run(300, x, y, 300)
    assert _core.emu_fake_torch_events() == ["op x+5", "queue", "commit", "get_command_buffer"]
    dev.synchronize()
    np.testing.assert_array_equal(y.read(), values + np.float32(5) + np.float32(1))
    assert _core.emu_violations() == []
