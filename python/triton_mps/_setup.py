"""Point the native core at the simulator's toolchain and shim before first use."""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
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
    enable_metal_validation()


def enable_metal_validation() -> None:
    """TRITON_MPS_METAL_VALIDATION: Metal's switches, set before anything in this process can
    make a Metal device (Metal reads them once, at the first device: MetalValidation(1)). A
    device made earlier (PyTorch's, once torch used MPS) keeps validation off: warn then."""
    if os.environ.get("TRITON_MPS_METAL_VALIDATION", "").strip().lower() not in _VALIDATION_ON:
        return
    if os.environ.get("MTL_SHADER_VALIDATION", "0") not in ("", "0"):
        return  # set by the user before the process started: in effect
    os.environ["MTL_SHADER_VALIDATION"] = "1"
    os.environ.setdefault("MTL_DEBUG_LAYER", "1")
    torch = sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "_C", None), "_has_mps", False):
        warnings.warn(
            "TRITON_MPS_METAL_VALIDATION=1: torch was imported before triton_mps; if it already made "
            "its Metal device (any use of MPS), Metal's shader validation stays off for this process. "
            "Set MTL_SHADER_VALIDATION=1 in the environment, or import triton_mps first.",
            RuntimeWarning,
            stacklevel=4,
        )


_VALIDATION_ON = ("1", "true", "yes", "on")


def configure_core(core) -> None:
    shim = Path(__file__).parent / "sim_include"
    if "TRITON_MPS_SIM_INCLUDE" not in os.environ and (shim / "metal_stdlib").is_file():
        core.set_sim_shim_dir(str(shim))
