"""A runaway simulated kernel can be stopped: Ctrl-C raises KeyboardInterrupt within a second,
TRITON_MPS_TIMEOUT stops it with a clear error, and the process stays usable after both.

Each case runs in a child process (a SIGINT must not reach pytest itself)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SPIN = r"""
#include <metal_stdlib>
using namespace metal;
// Spins until flag[0] becomes 1 (never): a runaway kernel. The flag is read through device
// memory on every iteration, so the loop cannot be optimized away.
kernel void spin(device atomic_uint* flag [[buffer(0)]], device uint* out [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  uint n = 0;
  while (atomic_load_explicit(flag, memory_order_relaxed) != 1u) ++n;
  out[i] = n;
}
// The same spin through a plain load (memcheck checks it inline in -O2 builds:
// sim/checked_access.h), whose check is the loop's only stop point.
kernel void spin_plain(device volatile uint* flag [[buffer(0)]], device uint* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  uint n = 0;
  while (*flag != 1u) ++n;
  out[i] = n;
}
kernel void twice(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  y[i] = 2.0f * x[i];
}
"""

CHILD = r"""
import os, signal, sys, threading, time
import numpy as np
import triton_mps

src, mode, kernel = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
dev = triton_mps.get_device("sim")
spin = triton_mps.compile_msl(src, kernel, dev)
twice = triton_mps.compile_msl(src, "twice", dev)
flag = np.zeros(1, np.uint32)
out = np.zeros(64, np.uint32)
if mode == "sigint":
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    spin(flag, out, grid=2, threads=32)
    dev.synchronize()
    print("RESULT finished")
except KeyboardInterrupt as e:
    print("RESULT KeyboardInterrupt", f"{time.monotonic() - t0:.2f}", e)
except triton_mps.DispatchError as e:
    print("RESULT DispatchError", f"{time.monotonic() - t0:.2f}", e)
x = np.arange(100, dtype=np.float32)
y = np.full(100, np.nan, np.float32)
twice(x, y, grid=4, threads=25)
dev.synchronize()
print("USABLE", bool(np.array_equal(y, 2 * x)))
"""


def _run(tmp_path, mode: str, kernel: str = "spin", **env) -> str:
    src = tmp_path / "spin.metal"
    src.write_text(SPIN)
    e = dict(os.environ, TRITON_MPS_CACHE_DIR=str(tmp_path / "cache"), **env)
    e.pop("TRITON_MPS_MEMCHECK", None)  # memcheck (the default) makes every access a stop point
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), mode, kernel], env=e, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _result(out: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    return line.split(" ", 3)


@pytest.mark.parametrize("kernel", ["spin", "spin_plain"])
def test_ctrl_c_stops_a_runaway_kernel_within_a_second(tmp_path, kernel):
    out = _run(tmp_path, "sigint", kernel, TRITON_MPS_TIMEOUT="60", TRITON_MPS_SIM_OPT="2")
    kind, seconds = _result(out)[1:3]
    assert kind == "KeyboardInterrupt", out
    assert float(seconds) < 0.5 + 1.0, out  # SIGINT sent at 0.5 s
    assert "USABLE True" in out, out


@pytest.mark.parametrize("kernel", ["spin", "spin_plain"])
def test_timeout_stops_a_runaway_kernel(tmp_path, kernel):
    out = _run(tmp_path, "timeout", kernel, TRITON_MPS_TIMEOUT="1", TRITON_MPS_SIM_OPT="2")
    _, kind, seconds, message = _result(out)
    assert kind == "DispatchError", out
    assert f"kernel '{kernel}' ran longer than TRITON_MPS_TIMEOUT = 1 s" in message, out
    # 1 s of the spinning worker's CPU time: at least 1 s of wall time, more on a loaded machine.
    assert 1.0 <= float(seconds) < 30.0, out
    assert "USABLE True" in out, out


def test_timeout_value_is_validated(tmp_path):
    src = tmp_path / "spin.metal"
    src.write_text(SPIN)
    code = ("import numpy as np, triton_mps\n"
            "d = triton_mps.get_device('sim')\n"
            f"k = triton_mps.compile_msl(open({str(src)!r}).read(), 'twice', d)\n"
            "x = np.ones(4, np.float32); k(x, x.copy(), grid=1, threads=4); d.synchronize()\n")
    env = dict(os.environ, TRITON_MPS_TIMEOUT="soon", TRITON_MPS_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "TRITON_MPS_TIMEOUT must be a number of seconds" in r.stderr, r.stderr
