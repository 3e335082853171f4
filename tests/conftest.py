"""Shared fixtures: the simulator device, fresh random data, poisoned outputs."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import triton_mps


def pytest_collection_modifyitems(config, items):
    on_mac = platform.system() == "Darwin" and any(not d.is_simulator for d in triton_mps.devices())
    skip = pytest.mark.skip(reason="needs a real Apple GPU (Metal)")
    for item in items:
        if "mac" in item.keywords and not on_mac:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sim():
    return triton_mps.get_device("sim")


@pytest.fixture
def rng(request):
    # Fresh data every run; the seed is printed on failure so a run can be replayed.
    seed = np.random.SeedSequence().entropy % (2**32)
    request.node.user_properties.append(("seed", seed))
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with a value no correct kernel writes (NaN or 0xA5 bytes)."""
    out = np.empty(shape, dtype=dtype)
    if np.issubdtype(out.dtype, np.floating):
        out.fill(np.nan)
    else:
        out.view(np.uint8).fill(0xA5)
    return out
