"""Forgetting TRITON_BACKEND=mps on Linux: Triton's "0 active drivers" comes with our hint."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from bad_input import bad_input

CODE = r"""
import torch, triton, triton.language as tl

@triton.jit
def k(x):
    tl.store(x, 1.0)

k[(1,)](torch.zeros(1))
"""


@pytest.mark.skipif(sys.platform == "darwin", reason="on macOS the backend activates itself with a Metal device")
@bad_input("TRITON_BACKEND unset on Linux",
           given="a Triton launch without TRITON_BACKEND=mps (Triton's '0 active drivers', after our RuntimeWarning)",
           raises="RuntimeError", says="set TRITON_BACKEND=mps to run Triton kernels on the triton-mps simulator")
def test_unset_backend_gives_a_hint(tmp_path, bad):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_BACKEND", "TRITON_DEFAULT_BACKEND")}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    script = tmp_path / "kernel.py"  # @triton.jit needs its source in a file
    script.write_text(CODE)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "0 active drivers" in r.stderr, r.stderr
    bad.check_message(r.stderr)
    assert "RuntimeError: 0 active drivers" in r.stderr, r.stderr
