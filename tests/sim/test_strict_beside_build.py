"""The strict Metal check runs beside the simulator's build (csrc/sim/sim_device.cpp), in builds a
caller waits for and in background ones (whose compilers run nicer): either way a kernel it
rejects raises its error, also when the build itself succeeds or fails too, and leaves nothing in
the on-disk cache that a later process could load without the check."""

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

    src, background = sys.argv[1], sys.argv[2] == "background"
    sim = next(d for d in triton_mps.devices() if d.is_simulator)
    try:
        if background:  # as backend/prebuild.py builds
            triton_mps.get_device(None).compile(src, "k", background=True)
        else:
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


def _run(src: str, cache: str, mode: str = "waited") -> str:
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=cache, TRITON_MPS_DEVICE="sim")
    r = subprocess.run([sys.executable, "-c", CHILD, src, mode], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize("mode", ["waited", "background"])
def test_a_rejected_kernel_that_builds_is_not_cached(tmp_path, mode):
    cache = str(tmp_path / "cache")
    for attempt in (1, 2):  # the second process finds nothing to load: it checks again
        out = _run(DOUBLE, cache, mode)
        assert "REJECTED Metal would reject this kernel" in out, (attempt, out)
        assert "double" in out, out
    assert not glob.glob(os.path.join(cache, "**", "*.so"), recursive=True)


@pytest.mark.parametrize("mode", ["waited", "background"])
def test_the_strict_error_comes_first_when_both_fail(tmp_path, mode):
    out = _run(BOTH, str(tmp_path / "cache"), mode)
    assert "REJECTED Metal would reject this kernel" in out, out


def test_a_kernel_both_accept_is_built_and_cached(tmp_path):
    cache = str(tmp_path / "cache")
    out = _run(DOUBLE.replace("double", "float"), cache)
    assert "COMPILED" in out, out
    assert glob.glob(os.path.join(cache, "**", "*.so"), recursive=True)
