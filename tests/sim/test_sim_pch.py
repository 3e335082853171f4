"""The shim's precompiled header only saves time: a corrupted or stale one (a reinstall under
way, a disk error) is dropped and the kernel compiles without it (csrc/sim/sim_compiler.cpp)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(r'''
    import glob, os, sys
    import numpy as np
    import triton_mps

    def run(scale):
        src = ("#include <metal_stdlib>\nusing namespace metal;\n"
               "kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) "
               "{ y[i] = float(i) * %d.0f; }\n" % scale)
        y = np.full(64, np.nan, np.float32)
        triton_mps.compile_msl(src, "k")(y, grid=1, threads=64)
        triton_mps.synchronize()
        assert (y == np.arange(64, dtype=np.float32) * scale).all(), y

    run(2)
    pchs = glob.glob(os.path.join(os.environ["TRITON_MPS_CACHE_DIR"], "**", "shim-*.pch"), recursive=True)
    if not pchs:
        print("NO-PCH")
        sys.exit(0)
    for p in pchs:
        with open(p, "wb") as f:
            f.write(b"not a precompiled header" * 100)
    run(3)  # a new kernel: compiled with the corrupted PCH first, then without it
    run(5)  # and the next one rebuilds the PCH
    print("OK", len(pchs))
''')


@pytest.mark.skipif(not any(d.is_simulator for d in __import__("triton_mps").devices()), reason="simulator only")
def test_a_corrupted_precompiled_header_is_dropped(tmp_path):
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    if "NO-PCH" in r.stdout:
        pytest.skip("this toolchain builds kernels without the shim's precompiled header")
    assert "OK" in r.stdout
