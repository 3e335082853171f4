"""Builds the C++ gtest suite (pool, pipeline cache, stream, MSL scanner, simulator) and runs it
through ctest, so `pytest` alone runs every test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "cpp-tests"


def _tool(name: str) -> str:
    # Prefer the tools installed with the test extras (next to this Python), then PATH.
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found: install the test extras (pip install '.[test]')")
    return found


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def built_tests() -> Path:
    cmake = _tool("cmake")
    configure = [
        cmake, "-S", str(ROOT), "-B", str(BUILD), "-G", "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        "-DTRITON_MPS_BUILD_TESTS=ON", "-DTRITON_MPS_BUILD_PYTHON=OFF",
        f"-DPython_EXECUTABLE={sys.executable}",
    ]
    r = _run(configure)
    assert r.returncode == 0, f"cmake configure failed:\n{r.stdout}\n{r.stderr}"
    jobs = str(os.cpu_count() or 2)
    r = _run([cmake, "--build", str(BUILD), "-j", jobs])
    assert r.returncode == 0, f"C++ build failed:\n{r.stdout[-20000:]}\n{r.stderr[-5000:]}"
    return BUILD


def test_gtest_suite(built_tests: Path):
    ctest = _tool("ctest")
    r = _run([ctest, "--test-dir", str(built_tests), "--output-on-failure", "-j", "2", "--timeout", "300"])
    print(r.stdout[-30000:])
    assert r.returncode == 0, f"gtest failures:\n{r.stdout[-30000:]}\n{r.stderr[-5000:]}"
    assert "tests passed" in r.stdout and "No tests were found" not in r.stdout
    # Tests that need the simulator's compiler skip without one; here it must be installed.
    assert "Skipped" not in r.stdout and "Not Run" not in r.stdout, "some gtests did not run"
