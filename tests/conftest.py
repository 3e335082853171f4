"""Shared fixtures: the simulator device and fresh random data (helpers: tmps_testing.py)."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest
import triton_mps

# Test modules in every folder import their helpers from tests/tmps_testing.py.
sys.path.insert(0, str(Path(__file__).parent))

from bad_input import bad  # noqa: E402, F401  (the fixture of @bad_input tests, in any folder)


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
