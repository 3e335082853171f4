"""Point the native core at the simulator's toolchain and shim before first use."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def find_zig() -> str | None:
    """The zig binary of the `ziglang` wheel (a clang 22 for the simulator), if installed."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for name in ("zig", "zig.exe"):
            candidate = Path(folder) / name
            if candidate.is_file():
                return str(candidate)
    return None


def configure_environment() -> None:
    # Environment first: the core reads it lazily, when the simulator first compiles.
    if "TRITON_MPS_ZIG" not in os.environ and "TRITON_MPS_SIM_CXX" not in os.environ:
        zig = find_zig()
        if zig:
            os.environ["TRITON_MPS_ZIG"] = zig


def configure_core(core) -> None:
    shim = Path(__file__).parent / "sim_include"
    if "TRITON_MPS_SIM_INCLUDE" not in os.environ and (shim / "metal_stdlib").is_file():
        core.set_sim_shim_dir(str(shim))
