"""The `mps` driver: devices, kernel loading, the launcher, benchmarking.

Activation (`MPSDriver.is_active`):
- TRITON_BACKEND=mps (or metal): active, on any machine (the simulator off macOS). On a machine
  where CUDA or ROCm is active too, also set TRITON_DEFAULT_BACKEND=mps.
- TRITON_BACKEND set to anything else: not active.
- otherwise: active only on macOS with a Metal device. Never on Linux/Windows without the
  variable, so a CUDA or ROCm machine is never taken over.

The driver class lives here (Triton imports this module and looks for exactly one DriverBase
subclass), with its user API (kernel config, memory_pool, device_info, synchronize: the
methods below Triton's); its parts live beside it: `device.py` (devices, properties, loading
kernels, Triton's device interface, memory statistics, the compilation listener that starts
pipeline builds), `kernel_config.py` (the kernel-config defaults), `launcher.py` (the launcher),
`jit_hooks.py` (Triton's JIT binder for array arguments), `benchmarking.py` (do_bench),
`registration.py` (triton.runtime.driver.MPSDriver, installing the listener).

Kernel config (`set_kernel_config`: num_warps, num_stages, max_threads, shared_memory), per
device and validated against its limits: what each value does is in kernel_config.py.
Every instance shares one state per device. `device` in the user API: an index, a
torch.device, or None for the current device.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from . import kernel_config
from .benchmarking import do_bench
from .device import (  # noqa: F401  (_devices: part of this module's surface)
    STREAM,
    MPSDeviceInterface,
    MPSUtils,
    _current,
    _default_index,
    _device,
    _devices,
    _index,
    device_info,
    memory_info,
    prebuild_after_compile,
)
from .jit_hooks import install_jit_hooks
from .launcher import make_launcher
from .registration import listen_to_compiles, register_on_triton

ACTIVATION_ENV = "TRITON_BACKEND"
ACTIVATION_VALUES = ("mps", "metal")


def requested_backend() -> str:
    """The backend TRITON_BACKEND asks for, normalized ("" when unset)."""
    return os.environ.get(ACTIVATION_ENV, "").strip().lower()


# ---- the driver ----------------------------------------------------------------------------------

_hinted = False


def _hint_when_nothing_is_active() -> None:
    """Off macOS we stay inactive unless asked; if no other backend is active either, Triton
    fails with "0 active drivers" and no hint. Say once what to set."""
    global _hinted
    if _hinted:
        return
    _hinted = True
    try:
        from triton.backends import backends

        others = [name for name, b in backends.items() if b.driver is not MPSDriver and b.driver.is_active()]
    except Exception:
        return
    if not others:
        warnings.warn(
            "no Triton GPU driver is active on this machine; triton-mps is installed but stays off outside "
            f"macOS unless asked: set {ACTIVATION_ENV}=mps to run Triton kernels on the triton-mps simulator "
            "(with torch CPU tensors)", RuntimeWarning, stacklevel=3)


class MPSDriver(DriverBase):
    """Triton's driver for `mps`, and its user API (kernel config, memory_pool, device_info,
    synchronize; see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.utils = MPSUtils()
        self.launcher_cls = make_launcher
        install_jit_hooks()  # numpy/MLX/DLPack array arguments, kernel-config cache keys (jit_hooks.py)
        if _current[0] < 0:
            _current[0] = _default_index()

    @staticmethod
    def is_active() -> bool:
        wanted = requested_backend()
        if wanted:
            return wanted in ACTIVATION_VALUES
        if sys.platform != "darwin":
            _hint_when_nothing_is_active()
            return False  # never take over a CUDA/ROCm machine: off macOS, only when asked for
        try:
            return any(not d.is_simulator for d in _devices())
        except Exception:
            return False

    # devices and streams
    def get_current_device(self) -> int:
        return _current[0]

    def set_current_device(self, device: Any) -> None:
        _device(device)  # validates
        _current[0] = _index(device)

    def get_current_stream(self, device: int | None = None) -> int:
        return STREAM  # one in-order stream per device, owned by the native core

    def get_current_target(self) -> GPUTarget:
        family = _device(self.get_current_device()).info["gpu_family"]  # "apple9"
        digits = "".join(c for c in family if c.isdigit())
        return GPUTarget("mps", int(digits) if digits else 7, 32)

    def get_active_torch_device(self):
        import torch

        dev = _device(self.get_current_device())
        # The emulated Metal device (Linux) takes CPU tensors, like the simulator.
        return torch.device("cpu") if dev.is_simulator or dev.is_emulated else torch.device("mps")

    def get_device_interface(self):
        return MPSDeviceInterface

    def map_python_to_cpp_type(self, ty: str) -> str:
        from ..compiler.types import BY_TRITON  # the dtype table

        d = BY_TRITON.get(ty.lstrip("*"))
        host = d.host if d is not None else ""
        if ty.startswith("*"):
            return f"device {host or ty[1:]}*"
        if not host:
            raise KeyError(ty)
        return host

    # benchmarking
    def get_benchmarker(self):
        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch

        dev = self.get_active_torch_device()
        # Larger than the last-level cache: 128 MiB on Metal (system cache <= 96 MiB), 32 MiB
        # on the simulator (clearing runs on the CPU each repetition).
        size = (32 if dev.type == "cpu" else 128) * 1024 * 1024
        return torch.empty(size // 4, dtype=torch.int32, device=dev)

    def clear_cache(self, cache) -> None:
        cache.zero_()

    @property
    def config(self) -> dict:
        """What the driver runs on: device, target, launch synchronization."""
        dev = _device(self.get_current_device())
        return {
            "device": dev.name,
            "device_index": self.get_current_device(),
            "is_simulator": dev.is_simulator,
            "is_emulated": dev.is_emulated,
            "target": self.get_current_target(),
            "launch_sync": os.environ.get("TRITON_MPS_LAUNCH_SYNC", "default"),  # launcher.launch_wait
            "pool": dev.pool_config(),
        }

    # ---- the user API -------------------------------------------------------------------------

    def set_kernel_config(self, *, num_warps: int | None = None, num_stages: int | None = None,
                          max_threads: int | None = None, shared_memory: int | None = None,
                          device: Any = None) -> dict[str, int]:
        """Defaults for kernels compiled from now on (see the module docstring); returns the
        effective config. ValueError (naming the limit) leaves the previous config in place."""
        return kernel_config.set_kernel_config(device, num_warps=num_warps, num_stages=num_stages,
                                               max_threads=max_threads, shared_memory=shared_memory)

    def get_kernel_config(self, device: Any = None) -> dict[str, int]:
        return kernel_config.get_kernel_config(device)

    def reset_kernel_config(self, device: Any = None) -> None:
        kernel_config.reset_kernel_config(device)

    def memory_pool(self, device: Any = None) -> dict[str, int]:
        """Memory statistics in bytes and counts. Every buffer the runtime makes counts:
        pooled buffers (triton_mps.empty, placeholders, debug records, lock tables) and the
        wrappers around caller memory bound to launches (torch tensors, numpy/MLX/DLPack
        arrays), which are counted while a launch or view holds them, never cached.
        `current_allocated` = pooled bytes handed out (size classes) + wrapped bytes;
        `max_allocated` its peak; `cached` idle pooled bytes; `num_allocs` / `num_frees`
        buffers handed out / released (pooled and wrapped); `cache_hits` / `cache_misses`
        pooled requests served from the cache / by a new device allocation."""
        return memory_info(device)

    def empty_cache(self, device: Any = None) -> None:
        _device(device).empty_cache()

    def reset_peak_stats(self, device: Any = None) -> None:
        _device(device).reset_peak()

    def set_pool_config(self, max_cached_bytes: int | None = None, max_buffer_age_ms: int | None = None,
                        device: Any = None) -> None:
        """Like MPS_MAX_POOL_SIZE / MPS_MAX_BUFFER_AGE, at run time (None keeps a value)."""
        dev = _device(device)
        cfg = dev.pool_config()
        dev.set_pool_config(cfg["max_cached_bytes"] if max_cached_bytes is None else int(max_cached_bytes),
                            cfg["max_buffer_age_ms"] if max_buffer_age_ms is None else int(max_buffer_age_ms))

    def device_info(self, device: Any = None) -> dict[str, Any]:
        return device_info(device)

    def synchronize(self, device: Any = None) -> None:
        """Wait for every launch on the device (and torch's MPS queue on a Mac)."""
        MPSDeviceInterface.synchronize(device)


register_on_triton(MPSDriver)  # triton.runtime.driver.MPSDriver

# Pipelines build ahead of their first launch (backend/prebuild.py), started by Triton's
# compilation listener at the end of each triton.compile, so the compile stages stay pure
# (compiler.py). Why the listener: triton.compile is the one call every compile path shares:
# the JIT (first call, warmup(), the autotuner's configs), Inductor's precompile and its compile
# workers (warm_cache_only), which call triton.compile directly and never load the kernel there.
# jit_post_compile_hook misses Inductor's and direct compiles; load_binary (the launcher's
# construction) comes at the first launch, too late to build ahead. Installed here, at import
# (Triton imports this module while discovering backends, in compile workers too), because
# triton.compile reads the listener before it makes our backend.
listen_to_compiles(prebuild_after_compile)
