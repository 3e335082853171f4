"""Every example in examples/ runs at its small size and says what it checked (in-process:
the examples share this process's compiled kernels and imports)."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
# scripts/test.sh runs tests/triton a second time on the emulated Metal device: the examples
# test the user surface, not the device, and run once.
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"),
                                reason="examples run in the default-device pass")
NAMES = ["vector_add_example", "softmax_example", "layer_norm_example", "matmul_example", "convolution_example",
         "torch_compile_example"]


@pytest.fixture(scope="module", autouse=True)
def examples_on_path():
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))


@pytest.mark.parametrize("name", NAMES)
def test_example(name, capsys):
    module = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=name)
    assert module["main"](["--small"]) == 0
    out = capsys.readouterr().out
    assert "checked" in out and "FAIL" not in out, out


def test_backend_comparison(capsys, tmp_path):
    module = runpy.run_path(str(EXAMPLES / "backend_comparison_example.py"), run_name="comparison")
    chart = tmp_path / "chart.png"
    assert module["main"](["--small", "--chart", str(chart)]) == 0
    out = capsys.readouterr().out
    assert "triton-mps" in out and "torch eager" in out and "numpy" in out
    assert "checked every result against float64 numpy: OK" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "chart skipped" in out
    else:
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
