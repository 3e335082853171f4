"""How many worker threads the simulator runs a dispatch on: the CPUs the process may use (its
affinity, not the machine's count); TRITON_MPS_SIM_THREADS overrides."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = "import triton_mps; print(triton_mps.get_device('sim').info['cpu_threads'])"


def _threads(**env: str) -> int:
    e = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER_COUNT", "TRITON_MPS_SIM_THREADS")}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", CHILD], env=e, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this OS")
def test_default_is_the_cpus_the_process_may_use():
    cpus = len(os.sched_getaffinity(0))
    assert _threads() == cpus
    assert _threads(PYTEST_XDIST_WORKER_COUNT="2") == cpus  # pytest -n 2: each worker all of them
    assert _threads(TRITON_MPS_SIM_THREADS="3") == 3  # an explicit count wins
    if cpus > 1:  # a process pinned to one CPU
        code = f"import os; os.sched_setaffinity(0, {{{min(os.sched_getaffinity(0))}}}); {CHILD}"
        e = {k: v for k, v in os.environ.items() if k != "TRITON_MPS_SIM_THREADS"}
        r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and int(r.stdout.split()[-1]) == 1, r.stdout + r.stderr


def test_a_gpu_device_reports_no_cpu_threads():
    import triton_mps

    try:
        dev = triton_mps.get_device("metal-emu")  # the Metal backend (emulated on Linux)
    except Exception as e:  # noqa: BLE001 - a build without it
        pytest.skip(f"no emulated Metal device: {e}")
    assert dev.info["cpu_threads"] == 0
