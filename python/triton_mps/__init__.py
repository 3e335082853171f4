"""triton-mps: Triton and Metal kernels on Apple GPUs, and on a CPU simulator everywhere else.

The native core (`_core`) holds devices, the buffer pool, the pipeline cache and the launcher;
`runtime` adds conversions from numpy arrays and torch tensors.
"""

from __future__ import annotations

from . import _setup

_setup.configure_environment()

from . import _core  # noqa: E402
from ._core import (  # noqa: E402
    Buffer,
    CompileError,
    DispatchError,
    Error,
    InvalidArgument,
    LimitExceeded,
    OutOfMemory,
    Pipeline,
    Timing,
    Unavailable,
)

_setup.configure_core(_core)

from .counters import counters_enabled, last_dispatch_stats, set_counters  # noqa: E402
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

__version__ = "0.1.0"

__all__ = [
    "Buffer",
    "CompileError",
    "DispatchError",
    "Error",
    "InvalidArgument",
    "Kernel",
    "LimitExceeded",
    "OutOfMemory",
    "Pipeline",
    "Timing",
    "Unavailable",
    "as_buffer",
    "compile_msl",
    "counters_enabled",
    "default_device",
    "devices",
    "empty",
    "get_device",
    "last_dispatch_stats",
    "set_counters",
    "synchronize",
]
