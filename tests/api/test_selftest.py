"""`python -m triton_mps selftest` passes on both Linux devices (the simulator and the emulated
Metal device); on a Mac it is what users paste into bug reports (docs/mac-checklist.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import triton_mps


@pytest.mark.parametrize("device", ["sim", "metal-emu"])
def test_selftest_passes(device):
    if device == "metal-emu" and not any(d.is_emulated for d in triton_mps.devices()):
        pytest.skip("built without the emulated Metal device")
    env = {**os.environ, "TRITON_DEFAULT_FP_FUSION": "1"}
    r = subprocess.run([sys.executable, "-m", "triton_mps", "selftest", "--device", device],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result: all checks passed" in r.stdout
    assert "[FAIL]" not in r.stdout
    assert "[  ok] cross-threadgroup atomics" in r.stdout and "[  ok] Triton" in r.stdout


def test_selftest_usage():
    r = subprocess.run([sys.executable, "-m", "triton_mps"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "selftest" in r.stderr
