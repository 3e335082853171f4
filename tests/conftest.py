"""Shared fixtures: the simulator device and fresh random data (helpers: tmps_testing.py)."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import numpy as np
import pytest
import triton_mps
from triton_mps.check import system_gpu_names

# Test modules in every folder import their helpers from tests/tmps_testing.py.
sys.path.insert(0, str(Path(__file__).parent))

from bad_input import bad  # noqa: E402, F401  (the fixture of @bad_input tests, in any folder)


def apple_gpu_skip_reason() -> str | None:
    """Why tests marked `mac` (Metal kernels on a real Apple GPU) cannot run here; None when they can.

    The native core lists only Metal devices of GPU family apple7 (M1) or later. GitHub's hosted
    arm64 macOS runners are VMs with an "Apple Paravirtual device" (family Apple5, no MPS): it is
    not listed, and is named here so the skip says why (docs/mac-checklist.md: a self-hosted Mac
    runs these tests).
    """
    if platform.system() != "Darwin":
        return "needs a real Apple GPU (Metal): not macOS"
    metal = [d for d in triton_mps.devices() if not d.is_simulator and not d.is_emulated]
    virtual = [d.name for d in metal if "paravirtual" in d.name.lower()]
    if virtual:
        return (f"needs a real Apple GPU: the Metal device is {virtual[0]!r} (a VM's paravirtual GPU, "
                "as on GitHub's hosted macOS runners); run on a self-hosted Mac")
    if metal:
        return None
    if "paravirtual" in system_gpu_names().lower():
        return ("needs a real Apple GPU: this Mac's GPU is an 'Apple Paravirtual device' (a VM, as on GitHub's "
                "hosted macOS runners: GPU family below apple7, no MPS); run on a self-hosted Mac")
    return "needs a real Apple GPU: no Metal device of GPU family apple7 (M1) or later"


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if "mac" in item.keywords]
    reason = apple_gpu_skip_reason() if marked else None
    if reason is None:
        return
    # The self-hosted Mac job sets TMPS_REQUIRE_APPLE_GPU=1: there a missing GPU is an error, not a skip.
    if os.environ.get("TMPS_REQUIRE_APPLE_GPU") == "1":
        raise pytest.UsageError(f"TMPS_REQUIRE_APPLE_GPU=1, but the `mac` tests would skip: {reason}")
    skip = pytest.mark.skip(reason=reason)
    for item in marked:
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
