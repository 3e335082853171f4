"""The bad-input table's tests (tests/bad_input.py): Triton with the `mps` backend, as in
tests/triton/conftest.py (which only applies to its own folder)."""

from __future__ import annotations

import os

import pytest

os.environ["TRITON_BACKEND"] = "mps"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


@pytest.fixture(scope="session")
def mps_driver():
    from triton.backends import Backend, backends
    from triton.runtime.driver import driver
    from triton_mps.backend.compiler import MPSBackend
    from triton_mps.backend.driver import MPSDriver

    if "mps" not in backends:  # triton was imported before the entry point was installed
        backends["mps"] = Backend(MPSBackend, MPSDriver)
    if not isinstance(driver.active, MPSDriver):
        driver.set_active(MPSDriver())
    return driver.active
