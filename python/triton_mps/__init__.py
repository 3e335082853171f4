"""triton-mps: Triton and Metal kernels on Apple GPUs, and on a CPU simulator everywhere else.

The native core (`_core`) holds devices, the buffer pool, the pipeline cache and the launcher;
`runtime` adds conversions from numpy arrays and torch tensors.
"""

from __future__ import annotations

from . import _env, _setup

_setup.configure_environment()
_env.check_environment()  # a warning for each TRITON_MPS_* value or name we do not accept

from . import _core  # noqa: E402
from ._core import (  # noqa: E402
    Buffer,
    CompileError,
    DispatchError,
    Error,
    HostError,
    InvalidArgument,
    LimitExceeded,
    OutOfMemory,
    Pipeline,
    Timing,
    Unavailable,
)

_setup.configure_core(_core)

from ._version import __version__ as __version__  # noqa: E402
from .counters import counters_enabled, last_dispatch_stats, set_counters  # noqa: E402
from .profiler import Profile, profile  # noqa: E402
from .runtime import (  # noqa: E402
    Kernel,
    as_buffer,
    compile_msl,
    default_device,
    devices,
    empty,
    get_device,
    synchronize,
)


def __getattr__(name: str):
    # The Triton driver class (imports triton): only when asked for, so that MSL kernels and
    # ahead-of-time compiled ones need no triton.
    if name == "MPSDriver":
        from .backend.driver import MPSDriver

        return MPSDriver
    raise AttributeError(f"module 'triton_mps' has no attribute {name!r}")


__all__ = [
    "Buffer",
    "CompileError",
    "DispatchError",
    "Error",
    "HostError",
    "InvalidArgument",
    "Kernel",
    "LimitExceeded",
    "MPSDriver",
    "OutOfMemory",
    "Pipeline",
    "Profile",
    "Timing",
    "Unavailable",
    "as_buffer",
    "compile_msl",
    "counters_enabled",
    "default_device",
    "devices",
    "empty",
    "get_device",
    "profile",
    "last_dispatch_stats",
    "set_counters",
    "synchronize",
]
