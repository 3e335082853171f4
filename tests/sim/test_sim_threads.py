"""How many worker threads the simulator runs a dispatch on: the CPUs the process may use,
shared among pytest-xdist's worker processes; TRITON_MPS_SIM_THREADS overrides."""

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
def test_default_is_the_cpus_the_process_may_use_shared_among_xdist_workers():
    cpus = len(os.sched_getaffinity(0))
    assert _threads() == cpus
    assert _threads(PYTEST_XDIST_WORKER_COUNT="2") == max(1, cpus // 2)
    assert _threads(PYTEST_XDIST_WORKER_COUNT=str(cpus * 4)) == 1
    assert _threads(PYTEST_XDIST_WORKER_COUNT="1") == cpus
    # an explicit count wins
    assert _threads(PYTEST_XDIST_WORKER_COUNT="2", TRITON_MPS_SIM_THREADS="3") == 3


def test_a_gpu_device_reports_no_cpu_threads():
    import triton_mps

    try:
        dev = triton_mps.get_device("metal-emu")  # the Metal backend (emulated on Linux)
    except Exception as e:  # noqa: BLE001 - a build without it
        pytest.skip(f"no emulated Metal device: {e}")
    assert dev.info["cpu_threads"] == 0
