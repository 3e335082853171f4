"""Triton with the `mps` backend on whatever device this machine has (the simulator off macOS).

Runs before `import triton` in these tests: selects the backend (TRITON_BACKEND=mps), points
Triton's cache at a fresh directory, and registers the entry point when triton-mps is not
pip-installed (a source checkout on PYTHONPATH), so discovery works exactly as installed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ["TRITON_BACKEND"] = "mps"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when unset
if "TRITON_CACHE_DIR" not in os.environ:
    # Removed when the process exits (~80 MB after a full run; each xdist worker has its own).
    _CACHE = tempfile.TemporaryDirectory(prefix="tmps-triton-cache-")
    os.environ["TRITON_CACHE_DIR"] = _CACHE.name


def _entry_point_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == "mps" for ep in entry_points().select(group="triton.backends"))


if "triton" not in sys.modules and not _entry_point_installed():
    _SITE = tempfile.TemporaryDirectory(prefix="tmps-entry-point-")  # removed at exit
    site = Path(_SITE.name)
    info = site / "triton_mps_source_checkout-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton-mps-source-checkout\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[triton.backends]\nmps = triton_mps.backend\n")
    sys.path.append(str(site))

from triton.backends import Backend, backends  # noqa: E402

if "mps" not in backends:  # triton was imported earlier by another test module, before the entry point
    from triton_mps.backend.compiler import MPSBackend
    from triton_mps.backend.driver import MPSDriver

    backends["mps"] = Backend(MPSBackend, MPSDriver)


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """A private Triton cache, and compile every time (these tests look at compile outputs)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")


@pytest.fixture(scope="session")
def mps_driver():
    from triton.runtime.driver import driver
    from triton_mps.backend.driver import MPSDriver

    if not isinstance(driver.active, MPSDriver):
        driver.set_active(MPSDriver())
    if os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"):
        assert driver.active.config["is_emulated"], "TRITON_MPS_DEVICE asks for the emulated Metal device"
    return driver.active
