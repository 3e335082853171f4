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
