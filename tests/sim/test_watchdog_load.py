"""TRITON_MPS_TIMEOUT counts a dispatch's own CPU time, not wall time: on a loaded machine a
healthy kernel that takes longer than the timeout in wall time is not stopped (a runaway one
still is: tests/sim/test_interrupt.py). The child pins itself and three busy processes to one CPU,
so the kernel gets at most a quarter of it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = r"""
import os, subprocess, sys, time
import numpy as np
import triton_mps

SRC = '''
#include <metal_stdlib>
using namespace metal;
kernel void burn(device float* y [[buffer(0)]], constant uint& n [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  float a = float(i);
  for (uint k = 0; k < n; ++k) a = a * 0.999999f + 1.0f;
  y[i] = a;
}
'''
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
dev = triton_mps.get_device("sim")
burn = triton_mps.compile_msl(SRC, "burn", dev)
y = np.zeros(32, np.float32)

def run(n):
    c0, t0 = time.thread_time(), time.monotonic()  # one worker: this thread runs the dispatch
    burn(y, n, grid=1, threads=32)
    dev.synchronize()
    return time.thread_time() - c0, time.monotonic() - t0

n = 1 << 16
while (cpu := run(n)[0]) < 0.1:
    n *= 2
n = int(n * 0.4 / cpu)  # about 0.4 s of CPU time
# Three busy processes on the same CPU (inherited affinity); each ends itself after 60 s should
# this process die before it kills them.
SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"
busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(3)]
try:
    time.sleep(0.2)
    os.environ["TRITON_MPS_TIMEOUT"] = "1"
    try:
        cpu, wall = run(n)
        print("RESULT finished", f"{cpu:.2f}", f"{wall:.2f}")
    except triton_mps.DispatchError as e:
        print("RESULT stopped", e)
finally:
    for p in busy:
        p.kill()
        p.wait()
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_a_slow_machine_does_not_time_out_a_healthy_kernel(tmp_path):
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=str(tmp_path / "cache"), TRITON_MPS_SIM_THREADS="1")
    env.pop("TRITON_MPS_TIMEOUT", None)
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("RESULT"))
    kind, *rest = line.split(" ", 3)[1:]
    assert kind == "finished", line
    cpu, wall = map(float, rest)
    assert cpu < 1.0 < wall, line  # under the timeout in CPU time, over it in wall time
