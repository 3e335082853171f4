"""compile_msl kernels take the same foreign arrays as Triton kernels (binding.py): MLX,
DLPack and buffer-protocol objects, bound in place."""

from __future__ import annotations

import array
from pathlib import Path

import numpy as np
import pytest
import triton_mps

BLOCK_SUM = (Path(__file__).resolve().parents[1] / "examples" / "block_sum.metal").read_text()


class DLPackOnly:
    def __init__(self, arr: np.ndarray):
        self._arr = arr

    def __dlpack__(self, **kwargs):
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


def test_block_sum_with_foreign_arrays(sim, rng):
    k = triton_mps.compile_msl(BLOCK_SUM, "block_sum", sim)
    x = rng.random(1000).astype(np.float32)
    expected = [x[i:i + 256].astype(np.float64).sum() for i in range(0, 1000, 256)]
    out = array.array("f", [float("nan")] * 4)  # the buffer protocol only
    k(DLPackOnly(x), out, 1000, grid=4, threads=256)
    sim.synchronize()
    np.testing.assert_allclose(list(out), expected, rtol=1e-5)
    mx = pytest.importorskip("mlx.core")
    out_m = mx.zeros((4,), dtype=mx.float32)
    k(mx.array(x), out_m, 1000, grid=4, threads=256)
    sim.synchronize()
    np.testing.assert_allclose(np.array(out_m), expected, rtol=1e-5)
