"""Helpers for the layer kernels' tests (test_layer_norm.py, test_attention.py, test_conv2d.py: float64
references with per-dtype tolerances; a plain module)."""

from __future__ import annotations

import torch
from tmps_testing import poisoned

# Comparison with float64 references: fp16 inputs are rounded before the reference sees them,
# so what remains is the kernel's own rounding (fp32 accumulation, fp16 results).
TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float16: dict(rtol=1e-2, atol=1e-2)}


def device(mps_driver) -> torch.device:
    return mps_driver.get_active_torch_device()


def randn(gen, *shape, dtype, dev, scale=1.0):
    """Fresh normal data from `gen` (a torch.Generator seeded per test), rounded to dtype."""
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype).to(dev)


def poisoned_tensor(shape, dtype, dev) -> torch.Tensor:
    """An output tensor filled with NaN (see tmps_testing.poisoned)."""
    np_dtype = {torch.float32: "float32", torch.float16: "float16", torch.int32: "int32"}[dtype]
    return torch.from_numpy(poisoned(shape, np_dtype)).to(dev)


def assert_close64(got: torch.Tensor, ref: torch.Tensor, dtype, scale: float = 1.0):
    """got (any dtype) against a float64 reference; tolerances from TOLERANCE scaled by `scale`."""
    assert not torch.isnan(got).any(), "output has NaN (an element was never written)"
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(got.double(), ref.double(), rtol=tol["rtol"] * scale, atol=tol["atol"] * scale)


def torch_gen(rng) -> torch.Generator:
    """A torch generator seeded from the `rng` fixture (fresh each run; its seed is printed)."""
    return torch.Generator().manual_seed(int(rng.integers(2**62)))
