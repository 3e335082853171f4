"""Helpers for the kernel-library tests (a plain module; conftest.py holds only fixtures)."""

from __future__ import annotations

import numpy as np
import torch
from tmps_testing import poisoned

# torch dtype -> numpy dtype, for the dtypes numpy has.
_NUMPY = {torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64,
          torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
          torch.uint8: np.uint8}


def torch_device(mps_driver) -> torch.device:
    return mps_driver.get_active_torch_device()


def poisoned_tensor(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """An output tensor no correct kernel leaves as is: NaN for floats, 0xA5 bytes for ints."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dtype in _NUMPY:
        return torch.from_numpy(poisoned(shape, _NUMPY[dtype])).to(device)
    if dtype.is_floating_point:  # bfloat16: numpy has none
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    raise TypeError(f"poisoned_tensor: no poison for {dtype}")


def seeded_generator(rng: np.random.Generator) -> torch.Generator:
    """A torch generator seeded from the test's fresh numpy rng (the seed is printed on failure)."""
    return torch.Generator().manual_seed(int(rng.integers(0, 2**63)))


def randn(shape, dtype: torch.dtype, gen: torch.Generator, device, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(shape, generator=gen, dtype=torch.float32) * scale).to(dtype).to(device)
