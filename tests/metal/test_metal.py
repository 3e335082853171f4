"""Metal-only checks: run on a Mac with an Apple GPU, skipped elsewhere (marker `mac`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

# The demo's kernel, as in tests/sim/test_sim_kernels.py (a test module of another folder is not importable).
REDUCE_SIMD = (Path(__file__).resolve().parents[2] / "examples" / "block_sum.metal").read_text()

pytestmark = pytest.mark.mac


def test_metal_device_info():
    dev = triton_mps.get_device("metal")
    info = dev.info
    assert not info["is_simulator"] and info["gpu_family"].startswith("apple")
    assert info["max_threads_per_threadgroup"] >= 1024 and info["unified_memory"]


def test_reduction_on_metal_matches_simulator(rng):
    metal = triton_mps.get_device("metal")
    x = triton_mps.empty(5000, np.float32, metal)
    x[:] = rng.standard_normal(5000)
    out = triton_mps.empty(20, np.float32, metal)
    out.fill(np.nan)
    k = triton_mps.compile_msl(REDUCE_SIMD, "block_sum", metal)
    k(x, out, 5000, grid=20, threads=256)
    metal.synchronize()
    padded = np.zeros(20 * 256)
    padded[:5000] = x
    np.testing.assert_allclose(out, padded.reshape(20, 256).sum(1), rtol=1e-5, atol=1e-5)


def test_torch_mps_tensor_binding(rng):
    torch = pytest.importorskip("torch")
    if not torch.backends.mps.is_available():
        pytest.skip("torch without MPS")
    metal = triton_mps.get_device("metal")
    x = torch.randn(1000, device="mps")
    y = torch.full((1000,), float("nan"), device="mps")
    src = """
kernel void add1(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) { if (i < 1000) y[i] = x[i] + 1.0f; }
"""
    k = triton_mps.compile_msl(src, "add1", metal)
    torch.mps.synchronize()
    k(x[0:], y, grid=8, threads=128)
    metal.synchronize()
    torch.testing.assert_close(y.cpu(), x.cpu() + 1)
    _ = poisoned
