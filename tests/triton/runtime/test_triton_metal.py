"""The `triton_metal` compatibility package: Triton's own objects on the mps backend."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl


def test_names_are_tritons():
    import triton_metal
    import triton_metal.language as tml

    assert triton_metal.jit is triton.jit and triton_metal.autotune is triton.autotune
    assert triton_metal.Config is triton.Config and triton_metal.cdiv is triton.cdiv
    assert triton_metal.language is tl and tml is tl
    assert triton_metal.MPSDriver is triton.runtime.driver.MPSDriver
    assert triton_metal.cdiv(10, 4) == 3


@pytest.mark.skipif(os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"),
                    reason="a fresh interpreter importing the package: once, in the default-device pass")
def test_import_selects_the_metal_backend_and_runs_a_kernel(tmp_path):
    # A fresh interpreter with no TRITON_BACKEND: importing triton_metal selects it; numpy
    # arrays need no torch.
    code = textwrap.dedent("""
        import os
        import numpy as np
        import triton_metal as tm
        import triton_metal.language as tl

        @tm.jit
        def double(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        x = np.arange(100, dtype=np.float32)
        double[(tm.cdiv(100, 64),)](x, 100, BLOCK=64)
        assert np.array_equal(x, np.arange(100, dtype=np.float32) * 2), x
        print("backend", os.environ["TRITON_BACKEND"], "torch imported:", "torch" in __import__("sys").modules)
    """)
    script = tmp_path / "uses_triton_metal.py"  # @jit needs its source in a file
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_BACKEND"}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "backend metal" in run.stdout


@triton.jit
def negate_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_metal_debug_logs_where_msl_and_ir_went(fresh_cache, monkeypatch, capfd):
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    x = torch.arange(8, dtype=torch.float32)
    k = negate_kernel[(1,)](x, 8, BLOCK=8)
    assert torch.equal(x, -torch.arange(8, dtype=torch.float32))
    err = capfd.readouterr().err
    assert "triton-mps: wrote msl, ttgir, ttir of kernel 'negate_kernel' to" in err
    folder = Path(k.metadata.tmps_debug_dir)
    assert str(folder) in err
    assert (folder / "negate_kernel.msl").read_text().startswith("#include <metal_stdlib>")
    assert "tt.func" in (folder / "negate_kernel.ttir").read_text()
