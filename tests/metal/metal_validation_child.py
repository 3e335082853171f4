"""Run by tests/metal/test_metal_validation.py in a fresh process: Metal reads its validation switches
when the process makes its first device, so the mode must be on before triton_mps starts.

Prints one JSON object: the DispatchError texts (None: no error) and the checks made in between.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from collections import namedtuple
from types import SimpleNamespace

os.environ.setdefault("TRITON_BACKEND", "mps")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton_mps  # noqa: E402
from triton_mps import _core  # noqa: E402

MSL = r"""
#include <metal_stdlib>
using namespace metal;
kernel void store_next(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i + 1] = x[i];
}
kernel void load_next(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i] = x[i + 1];
}
"""


@triton.jit
def shifted_store(x, y, n, SHIFT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.store(y + offs + SHIFT, v, mask=m)  # STORE


@triton.jit
def shifted_load(x, y, n, SHIFT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs + SHIFT, mask=m)  # LOAD
    tl.store(y + offs, v, mask=m)


def line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith("# " + marker))


def dispatch_error(launch) -> str | None:
    try:
        launch()
        triton_mps.synchronize()
    except triton_mps.DispatchError as e:
        return str(e)
    return None


def page_tensor(n: int) -> torch.Tensor:
    """n floats whose storage starts on a 16 KiB page: with n * 4 a page multiple, the Metal
    buffer wrapping them (host memory is wrapped in whole pages) ends where the tensor ends.
    The launcher binds a tensor's whole storage; from_numpy's storage is the array's extent."""
    raw = np.empty(n + 4096, np.float32)
    first = (-raw.ctypes.data % 16384) // 4
    return torch.from_numpy(raw[first : first + n])


dev = triton_mps.default_device()
# The native core sets Metal's switches with setenv (os.environ is Python's copy from startup).
getenv = ctypes.CDLL(None).getenv
getenv.restype = ctypes.c_char_p
out: dict = {"env": {k: (getenv(k.encode()) or b"").decode() for k in ("MTL_SHADER_VALIDATION", "MTL_DEBUG_LAYER")}}
out["device"] = dev.name
rng = np.random.default_rng(7)

# Raw MSL through the direct Metal API, on pool buffers of 256 floats (exactly 1024 bytes: a
# size class of its own, so the Metal buffer is exactly the argument).
n = 256
xb, yb = dev.buffer(4 * n), dev.buffer(4 * n)
xs = rng.standard_normal(n).astype(np.float32)
np.frombuffer(xb.bytes_view(), np.float32)[:] = xs
for name in ("store_next", "load_next"):
    k = triton_mps.compile_msl(MSL, name, dev)
    out[name] = dispatch_error(lambda k=k: k(xb, yb, n, grid=n // 32, threads=32))
    out[name + "_in_bounds"] = dispatch_error(lambda k=k: k(xb, yb, n - 1, grid=n // 32, threads=32))
ys = np.frombuffer(yb.bytes_view(), np.float32)
out["msl_result_ok"] = bool(np.array_equal(ys[: n - 1], xs[1:]))  # load_next ran last, in bounds
out["msl_lines"] = {"store_next": 6, "load_next": 10}

# Triton kernels on torch CPU tensors that end on a page boundary.
n = 4096
x = page_tensor(n)
x.copy_(torch.from_numpy(rng.standard_normal(n).astype(np.float32)))
y = page_tensor(n)
grid = (n // 1024,)
out["triton_store"] = dispatch_error(lambda: shifted_store[grid](x, y, n, 1, BLOCK=1024))
out["triton_load"] = dispatch_error(lambda: shifted_load[grid](x, y, n, 1, BLOCK=1024))
out["triton_lines"] = {"store": line_of("STORE"), "load": line_of("LOAD")}
y.fill_(float("nan"))
out["triton_in_bounds"] = dispatch_error(lambda: shifted_store[grid](x, y, n, 0, BLOCK=1024))
out["triton_result_ok"] = bool(torch.equal(x, y))

# An overrun that stays inside the Metal buffer (the rest of the tensor's last page) is not
# seen: Metal checks the buffer it was given, not the tensor.
raw = np.full(1024, np.nan, np.float32)
short = torch.from_numpy(raw[:100])  # a 400-byte storage inside a page
out["inside_page"] = dispatch_error(lambda: shifted_store[(1,)](x[:100].clone(), short, 100, 1, BLOCK=128))
out["inside_page_wrote_past"] = bool(raw[100] == x[99].item())

# A launch with `mps` tensors is encoded on PyTorch's stream (csrc/metal/torch_stream.cpp):
# here a fake torch/mps.h API (csrc/metal_emu/emu_hooks.cpp) and stand-ins for `mps` tensors over
# emulated MTLBuffers of exactly 256 floats, as in tests/triton/runtime/test_metal_emu_torch.py.
STORE_NEXT_INT = """#include <metal_stdlib>
using namespace metal;
kernel void torch_store_next(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (int(i) < n) y[i + 1] = x[i];
}
"""


class MpsStandIn(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, count: int):
        t = torch.Tensor._make_subclass(cls, torch.empty(count, dtype=torch.float32))
        t._handle, t._nbytes = _core.emu_new_buffer(count * 4, True), count * 4
        return t

    is_cpu = property(lambda self: False)
    is_mps = property(lambda self: True)
    device = property(lambda self: SimpleNamespace(type="mps", __str__=lambda: "mps:0"))

    def untyped_storage(self):
        return SimpleNamespace(data_ptr=lambda: self._handle, nbytes=lambda: self._nbytes)

    def storage_offset(self) -> int:
        return 0


def torch_stream_launch(count: int) -> str | None:
    from triton.runtime.driver import driver
    from triton_mps.compiler.abi import ArgInfo, CompiledMSL

    args = [ArgInfo("x", "pointer", "float", 0, 0), ArgInfo("y", "pointer", "float", 1, 1),
            ArgInfo("n", "scalar", "int", 2, 2)]
    signature = {"x": "*fp32", "y": "*fp32", "n": "i32"}
    meta = namedtuple("Metadata", "name num_warps warp_size shared tmps_args num_ctas")(
        "torch_store_next", 4, 32, 0,
        CompiledMSL(msl=STORE_NEXT_INT, name="torch_store_next", num_warps=4, shared=0, args=args).to_metadata(), 1)
    index = next(i for i, d in enumerate(triton_mps.devices()) if d.is_emulated)
    _, function, *_ = driver.active.utils.load_binary("torch_store_next", STORE_NEXT_INT.encode(), 0, index)
    src = SimpleNamespace(signature=signature, fn=SimpleNamespace(arg_names=list(signature)))
    launcher = driver.active.launcher_cls(src, meta)
    x, y = MpsStandIn(256), MpsStandIn(256)
    _core.emu_attach_fake_torch(dev)
    try:
        return dispatch_error(lambda: launcher(2, 1, 1, 0, function, (4, 1, 0), None, None, None, x, y, count))
    finally:
        _core.detach_foreign_stream(dev)
        _core.emu_release(x._handle)
        _core.emu_release(y._handle)


out["torch_stream"] = torch_stream_launch(256)
out["torch_stream_in_bounds"] = torch_stream_launch(255)

out["pool_after"] = dispatch_error(lambda: dev.buffer(1 << 20))
out["violations"] = list(_core.emu_violations())
# Logs and errors go with their command buffers (the queue thread drops the last reference just
# after the completion handlers ran).
deadline = time.monotonic() + 5
while "MTLEmuCommandBuffer" in _core.emu_live_objects() and time.monotonic() < deadline:
    time.sleep(0.01)
out["live_logs"] = {k: v for k, v in _core.emu_live_objects().items() if "Log" in k or k == "MTLEmuCommandBuffer"}
print(json.dumps(out))
