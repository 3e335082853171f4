"""The strict Metal check runs beside the simulator's build (csrc/sim/sim_device.cpp): a kernel
it rejects raises its error, also when the build itself succeeds or fails too, and leaves nothing
in the on-disk cache that a later process could load without the check."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap

import pytest
import triton_mps

pytestmark = pytest.mark.skipif(not any(d.is_simulator for d in triton_mps.devices()), reason="simulator only")

CHILD = textwrap.dedent(r'''
    import sys
    import numpy as np
    import triton_mps

    src = sys.argv[1]
    sim = next(d for d in triton_mps.devices() if d.is_simulator)
    try:
        triton_mps.compile_msl(src, "k", sim)
        print("COMPILED")
    except triton_mps.CompileError as e:
        print("REJECTED", str(e).splitlines()[0])
        print(e)
''')

# C++ accepts double (the build succeeds); Metal has none (the strict check rejects it).
DOUBLE = ("#include <metal_stdlib>\nusing namespace metal;\n"
          "kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) "
          "{ double t = 1.0 + i; y[i] = float(t); }\n")
# Both fail: the strict check's words come first.
BOTH = DOUBLE.replace("y[i] = float(t);", "y[i] = float(t) + no_such_name;")


def _run(src: str, cache: str) -> str:
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=cache, TRITON_MPS_DEVICE="sim")
    r = subprocess.run([sys.executable, "-c", CHILD, src], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout


def test_a_rejected_kernel_that_builds_is_not_cached(tmp_path):
    cache = str(tmp_path / "cache")
    for attempt in (1, 2):  # the second process finds nothing to load: it checks again
        out = _run(DOUBLE, cache)
        assert "REJECTED Metal would reject this kernel" in out, (attempt, out)
        assert "double" in out, out
    assert not glob.glob(os.path.join(cache, "**", "*.so"), recursive=True)


def test_the_strict_error_comes_first_when_both_fail(tmp_path):
    out = _run(BOTH, str(tmp_path / "cache"))
    assert "REJECTED Metal would reject this kernel" in out, out


def test_a_kernel_both_accept_is_built_and_cached(tmp_path):
    cache = str(tmp_path / "cache")
    out = _run(DOUBLE.replace("double", "float"), cache)
    assert "COMPILED" in out, out
    assert glob.glob(os.path.join(cache, "**", "*.so"), recursive=True)
