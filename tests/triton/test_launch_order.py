"""Ordering of launches between our own stream and a foreign one (PyTorch's MPS stream on a Mac),
csrc/foreign_stream.h, unit-tested on the simulator.

A RecordingForeignStream stands in for PyTorch's stream: with `takes_host_tensors` the launcher
routes launches that bind CPU tensors to it exactly as it routes `mps` tensors on a Mac, and it
records what is done to it ("encode <kernel>", "commit", "synchronize", and "owner <label>" for
work the owner itself issues). Its command buffer is a batch of the simulator, executed when the
owner commits, so a result that is read too early is still the poison.
"""

from __future__ import annotations

import os
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import triton_mps
from triton_mps import _core
from triton_mps.compiler.abi import ArgInfo, CompiledMSL

# out[i] = x[i] * alpha + y[i] for i < n, 256 elements per program.
SCALE_ADD = """#include <metal_stdlib>
using namespace metal;
kernel void order_scale_add(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                            device float* out [[buffer(2)]], constant int& n [[buffer(3)]],
                            constant float& alpha [[buffer(4)]],
                            uint3 tmps_pid [[threadgroup_position_in_grid]],
                            uint tmps_tid [[thread_index_in_threadgroup]]) {
  for (uint i = tmps_tid; i < 256u; i += 64u) {
    int o = int(tmps_pid.x) * 256 + int(i);
    if (o < n) out[o] = x[o] * alpha + y[o];
  }
}
"""
SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "alpha": "fp32"}
ARGS = [
    ArgInfo("x", "pointer", "float", 0, 0),
    ArgInfo("y", "pointer", "float", 1, 1),
    ArgInfo("out", "pointer", "float", 2, 2),
    ArgInfo("n", "scalar", "int", 3, 3),
    ArgInfo("alpha", "scalar", "float", 4, 4),
]
Metadata = namedtuple("Metadata", "name num_warps warp_size shared tmps_args num_ctas")
N = 1000  # not a multiple of the 256-element block


@pytest.fixture(scope="module")
def kernel(mps_driver):
    dev_index = mps_driver.get_current_device()
    if not triton_mps.devices()[dev_index].is_simulator:
        pytest.skip("the recording foreign stream is tested on the simulator")
    compiled = CompiledMSL(msl=SCALE_ADD, name="order_scale_add", num_warps=2, shared=0, args=ARGS)
    meta = Metadata("order_scale_add", 2, 32, 0, compiled.to_metadata(), 1)
    src = SimpleNamespace(signature=SIGNATURE, fn=SimpleNamespace(arg_names=list(SIGNATURE)))
    _, function, *_ = mps_driver.utils.load_binary("order_scale_add", SCALE_ADD.encode(), 0, dev_index)

    def make():
        launcher = mps_driver.launcher_cls(src, meta)

        def run(x, y, out, alpha, n=N, grid=None):
            g = (n + 255) // 256 if grid is None else grid
            launcher(g, 1, 1, 0, function, (2, 1, 0), None, None, None, x, y, out, n, alpha)

        return run

    return SimpleNamespace(make=make, run=make(), device=function.device)


@pytest.fixture
def recording(kernel):
    stream = _core.attach_recording_stream(kernel.device, True)
    yield stream
    _core.detach_foreign_stream(kernel.device)


def tensors(rng, n=N):
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    return x, y, torch.full((n,), float("nan"))


def reference(x, y, alpha):
    return (x.double() * alpha + y.double()).float()


def test_foreign_launch_is_encoded_and_not_waited_for(kernel, recording, rng):
    x, y, out = tensors(rng)
    recording.owner_op("before")
    kernel.run(x, y, out, 1.5)
    recording.owner_op("after")
    # Ordered between the owner's work, and nothing waited: the kernel has not run yet.
    assert recording.events() == ["owner before", "encode order_scale_add", "owner after"]
    assert torch.isnan(out).all()
    assert _core.foreign_pending(kernel.device) == 1
    kernel.device.synchronize()  # triton_mps.synchronize(): both streams
    assert recording.events()[-1] == "synchronize"
    assert _core.foreign_pending(kernel.device) == 0
    torch.testing.assert_close(out, reference(x, y, 1.5))


def test_own_launch_waits_for_the_foreign_stream_first(kernel, recording, rng):
    # The foreign launch writes `mid`; the next launch binds numpy arrays (our own stream) and
    # reads it: it must wait for the foreign stream, or it would read the poison.
    x, y, mid = tensors(rng)
    kernel.run(x, y, mid, 2.0)
    out = np.full(N, np.nan, np.float32)
    kernel.run(mid.numpy(), y.numpy(), out, -0.5)
    assert recording.events() == ["encode order_scale_add", "synchronize"]
    expected = reference(reference(x, y, 2.0), y, -0.5)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-6, atol=1e-6)


def test_foreign_launch_waits_for_our_own_stream_first(kernel, recording, rng):
    # Work left on our own stream (a compile_msl launch is batched, not committed) and then a
    # foreign launch that reads its output: our stream is drained before the foreign encode.
    k = triton_mps.compile_msl(SCALE_ADD, "order_scale_add", kernel.device)
    x, y, _ = tensors(rng)
    mid = np.full(N, np.nan, np.float32)
    k(x.numpy(), y.numpy(), mid, N, 3.0, grid=(N + 255) // 256, threads=64)
    assert kernel.device.pending == 1
    out = torch.full((N,), float("nan"))
    kernel.run(torch.from_numpy(mid), y, out, 1.0)
    assert kernel.device.pending == 0
    assert not np.isnan(mid).any()  # ran before the foreign launch was encoded
    assert recording.events() == ["encode order_scale_add"]
    kernel.device.synchronize()
    torch.testing.assert_close(out, reference(reference(x, y, 3.0), y, 1.0))


def test_commit_every_n_foreign_launches(kernel, recording, rng):
    _core.set_foreign_commit_every(kernel.device, 2)
    try:
        x, y, out = tensors(rng)
        for _ in range(3):
            kernel.run(x, y, out, 1.0)
        assert recording.events() == ["encode order_scale_add"] * 2 + ["commit", "encode order_scale_add"]
        # The committed batch ran (the GPU started on it) though nobody waited.
        torch.testing.assert_close(out, reference(x, y, 1.0))
    finally:
        _core.set_foreign_commit_every(kernel.device, 64)


def test_launch_sync_1_waits_after_each_launch(kernel, recording, rng, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_LAUNCH_SYNC", "1")
    run = kernel.make()
    x, y, out = tensors(rng)
    run(x, y, out, 0.25)
    assert recording.events() == ["encode order_scale_add", "synchronize"]
    torch.testing.assert_close(out, reference(x, y, 0.25))


def test_empty_grid_encodes_nothing(kernel, recording, rng):
    x, y, out = tensors(rng)
    kernel.run(x, y, out, 1.0, grid=0)
    assert recording.events() == []
    assert torch.isnan(out).all()


def test_bad_argument_leaves_the_foreign_stream_untouched(kernel, recording, rng):
    x, y, out = tensors(rng)
    with pytest.raises(triton_mps.InvalidArgument, match="alpha"):
        kernel.run(x, y, out, "not a number")
    assert recording.events() == []
    kernel.run(x, y, out, 1.0)
    kernel.device.synchronize()
    torch.testing.assert_close(out, reference(x, y, 1.0))


def test_launch_sync_rejects_other_values(kernel, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_LAUNCH_SYNC", "sometimes")
    with pytest.raises(ValueError, match="TRITON_MPS_LAUNCH_SYNC"):
        kernel.make()


def test_torch_mps_symbol_names_match_torch():
    # The mangled names we dlsym on a Mac, checked against the torch library of this machine
    # (Linux builds export the same torch::mps functions; they fail only when called).
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    if not os.path.exists(lib):
        pytest.skip(f"no {lib}")
    found = _core.torch_mps_api_symbols(lib)
    torch_names = [name for name in found if name.startswith("_ZN5torch3mps")]
    assert len(torch_names) == 4
    assert all(found[name] for name in torch_names), found
    # Never loads a library that is not loaded already.
    assert not any(_core.torch_mps_api_symbols("/nonexistent/libtorch_cpu.dylib")[n] for n in torch_names)
