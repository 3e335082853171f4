"""fork() after a device was used (issue 21, item 4): Metal is not fork-safe (a child has none of
the parent's threads), so the Metal devices refuse to work in the child with a clear error; the
simulator works there."""

from __future__ import annotations

import os
import select
import signal

import numpy as np
import pytest
import triton_mps
from bad_input import bad_input

SRC = r"""
#include <metal_stdlib>
using namespace metal;
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1.0f; }
"""


def _launch(dev) -> float:
    kernel = triton_mps.compile_msl(SRC, "add_one", dev)
    x = np.zeros(64, np.float32)
    kernel(x, grid=2, threads=32)
    triton_mps.synchronize(dev)
    return float(x.sum())


def _in_forked_child(dev) -> tuple[str, str]:
    """(exception class or "ok", message or result) of a launch on `dev` in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        try:
            out = ("ok", str(_launch(dev)))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = (type(e).__name__, str(e))
        os.write(write, "\0".join(out).encode())
        os._exit(0)
    os.close(write)
    try:
        if not select.select([read], [], [], 60)[0]:
            os.kill(pid, signal.SIGKILL)
            return "hang", "the child's launch did not return within 60 s"
        data = b""
        while chunk := os.read(read, 65536):
            data += chunk
        kind, _, text = data.decode().partition("\0")
        return kind, text
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_simulator_works_in_a_forked_child():
    sim = triton_mps.get_device("sim")
    assert _launch(sim) == 64.0
    assert _in_forked_child(sim) == ("ok", "64.0")
    assert _launch(sim) == 64.0


@bad_input("Metal device used in a forked child", given="os.fork() after a launch on the Metal device, then a "
           "launch in the child", raises="triton_mps.Unavailable",
           says="Metal cannot be used in a forked subprocess")
def test_metal_device_refuses_a_forked_child(bad):
    emu = [d for d in triton_mps.devices() if d.is_emulated]
    if not emu:
        pytest.skip("built without the emulated Metal device")
    assert _launch(emu[0]) == 64.0
    kind, message = _in_forked_child(emu[0])
    assert kind == "Unavailable", (kind, message)
    with bad.expect():
        raise triton_mps.Unavailable(message)
    assert _launch(emu[0]) == 64.0  # the parent is unaffected


# Issue 28 item 5: the parent used Metal only through PyTorch (its MPS stream exists), never
# through triton_mps. A fresh interpreter each, since this one has used the emulated device.
_PARENT = r"""
import os, sys
import numpy as np
import triton_mps
from triton_mps import _core

SRC = sys.argv[2]
if sys.argv[1] == "torch":
    _core.emu_fake_torch_op("sin")  # PyTorch makes its MPS stream (the emulation's fake torch)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        if sys.argv[3] == "sim":
            dev = triton_mps.get_device("sim")
        else:
            dev = [d for d in triton_mps.devices() if d.is_emulated][0]
        kernel = triton_mps.compile_msl(SRC, "add_one", dev)
        x = np.zeros(64, np.float32)
        kernel(x, grid=2, threads=32)
        triton_mps.synchronize(dev)
        out = "ok\0" + str(float(x.sum()))
    except BaseException as e:
        out = type(e).__name__ + "\0" + str(e)
    os.write(write, out.encode())
    os._exit(0)
os.close(write)
data = b""
while chunk := os.read(read, 65536):
    data += chunk
os.waitpid(pid, 0)
print(data.decode())
"""


def _fork_after(parent_used: str, child_device: str = "metal-emu") -> tuple[str, str]:
    import subprocess
    import sys

    if not hasattr(triton_mps._core, "emu_fake_torch_op"):
        pytest.skip("built without the emulated Metal device")
    try:
        r = subprocess.run([sys.executable, "-c", _PARENT, parent_used, SRC, child_device], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "hang", "the forked child's launch did not return within 120 s"
    assert r.returncode == 0, r.stderr[-3000:]
    kind, _, text = r.stdout.strip().partition("\0")
    return kind, text


def test_metal_refuses_a_child_of_a_parent_that_used_mps_through_torch():
    kind, message = _fork_after("torch")
    assert kind == "Unavailable", (kind, message)
    assert "forked subprocess" in message and "through PyTorch's MPS backend" in message, message


def test_metal_works_in_a_child_of_a_parent_that_never_used_metal():
    assert _fork_after("nothing") == ("ok", "64.0")


def test_simulator_works_in_a_child_of_a_parent_that_used_mps_through_torch():
    # Device discovery in that child touches no Metal: the Metal device it lists refuses, the
    # simulator works.
    assert _fork_after("torch", "sim") == ("ok", "64.0")
