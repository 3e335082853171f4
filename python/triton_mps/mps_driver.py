"""The driver's user API: kernel-config defaults, memory statistics, device info, synchronize.

`triton.runtime.driver.MPSDriver` (registered when Triton discovers the backend) and
`triton_mps.MPSDriver` are the backend's driver class (backend/driver.py), which takes these
methods from `DriverSurface`. Every instance shares one state per device: configuration set
through one `MPSDriver()` is what all others (and the active Triton driver) see.

Kernel config (`set_kernel_config`), per device, validated against the device's limits:
- `num_warps`: default simdgroups per threadgroup for kernels whose launch does not pass
  `num_warps` (autotuning configs always pass it);
- `num_stages`: accepted and recorded in `compiled.metadata`, but it has NO effect: the `mps`
  compiler does not run Triton's software pipeliner (it emits async copies Metal lacks). A
  one-time warning says so when it is set above 1 here (a launch or autotune config passing it
  gets one INFO record on the "triton_mps" logger);
- `max_threads`: a cap on the threadgroup size: a kernel compiled with
  `num_warps * 32 > max_threads` raises `OutOfResources` (autotuning prunes such configs);
- `shared_memory`: the threadgroup-memory budget: `tl.dot` plans its operand staging within it
  (smaller K chunks through threadgroup memory); a kernel that still needs more (other ops
  use what their layouts need) raises `OutOfResources` when compiled.
Defaults apply to kernels compiled afterwards (Triton's in-memory cache is keyed on them too).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

KERNEL_CONFIG_KEYS = ("num_warps", "num_stages", "max_threads", "shared_memory")
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 1

_lock = threading.Lock()
_configs: dict[int, dict[str, int]] = {}  # device index -> the values set (only those)
_notified_num_stages = [False]
_logged_num_stages = [False]


# ---- devices ---------------------------------------------------------------------------------

def _backend_driver():
    from .backend import driver

    return driver


def current_device_index() -> int:
    return _backend_driver()._index(None)


def _device(device: Any = None):
    return _backend_driver()._device(device)


def device_limits(device: Any = None) -> dict[str, int]:
    info = _device(device).info
    return {
        "max_threads_per_threadgroup": int(info["max_threads_per_threadgroup"] or 1024),
        "max_threadgroup_memory": int(info["max_threadgroup_memory"] or 32768),
        "simd_width": int(info["simd_width"] or 32),
    }


# ---- kernel config ---------------------------------------------------------------------------

def validate_kernel_config(values: dict[str, int], limits: dict[str, int], device_name: str) -> None:
    """Raise ValueError naming the limit a value breaks."""
    for key, v in values.items():
        if key not in KERNEL_CONFIG_KEYS:
            raise TypeError(f"unknown kernel config '{key}'; expected one of {', '.join(KERNEL_CONFIG_KEYS)}")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{key}={v!r}: expected a positive integer")
    simd = limits["simd_width"]
    device_threads = limits["max_threads_per_threadgroup"]
    max_threads = values.get("max_threads", device_threads)
    if max_threads > device_threads:
        raise ValueError(f"max_threads={max_threads} exceeds the device's limit of {device_threads} threads per "
                         f"threadgroup (max_threads_per_threadgroup of '{device_name}')")
    if max_threads % simd:
        raise ValueError(f"max_threads={max_threads} is not a multiple of the SIMD-group width {simd} "
                         "(threadgroups are num_warps * 32 threads)")
    if "num_warps" in values:
        nw = values["num_warps"]
        if nw & (nw - 1):
            raise ValueError(f"num_warps={nw}: must be a power of 2")
        if nw * simd > max_threads:
            which = "max_threads" if "max_threads" in values else f"max_threads_per_threadgroup of '{device_name}'"
            raise ValueError(f"num_warps={nw} needs {nw * simd} threads per threadgroup; the limit is {max_threads} "
                             f"({which})")
    if "shared_memory" in values:
        sm = values["shared_memory"]
        device_shared = limits["max_threadgroup_memory"]
        if sm > device_shared:
            raise ValueError(f"shared_memory={sm} exceeds the device's limit of {device_shared} bytes of threadgroup "
                             f"memory (max_threadgroup_memory of '{device_name}')")
        if sm % 16:
            raise ValueError(f"shared_memory={sm}: Metal threadgroup memory comes in multiples of 16 bytes")


def set_kernel_config(device: Any = None, **values: int | None) -> dict[str, int]:
    given = {k: v for k, v in values.items() if v is not None}
    dev = _device(device)
    index = _backend_driver()._index(device)
    with _lock:
        merged = {**_configs.get(index, {}), **given}
        validate_kernel_config(merged, device_limits(device), dev.name)
        _configs[index] = merged
    if given.get("num_stages", 1) > 1:
        notice_num_stages(given["num_stages"], stacklevel=4)
    return get_kernel_config(device)


def get_kernel_config(device: Any = None) -> dict[str, int]:
    """The effective defaults: what was set, else the backend's defaults and the device limits."""
    limits = device_limits(device)
    with _lock:
        cfg = dict(_configs.get(_backend_driver()._index(device), {}))
    return {
        "num_warps": cfg.get("num_warps", DEFAULT_NUM_WARPS),
        "num_stages": cfg.get("num_stages", DEFAULT_NUM_STAGES),
        "max_threads": cfg.get("max_threads", limits["max_threads_per_threadgroup"]),
        "shared_memory": cfg.get("shared_memory", limits["max_threadgroup_memory"]),
    }


def reset_kernel_config(device: Any = None) -> None:
    with _lock:
        _configs.pop(_backend_driver()._index(device), None)


def kernel_config_overrides() -> dict[str, int]:
    """The values set for the current device (compiler defaults; empty when nothing was set)."""
    if not _configs:  # the common case, on every launch (interop's binder): no lock, no lookup
        return {}
    with _lock:
        return dict(_configs.get(current_device_index(), {}))


def notice_num_stages(num_stages: int, stacklevel: int = 2, warn: bool = True) -> None:
    """Say once that num_stages has no effect: a UserWarning when the user set it as a default
    (set_kernel_config), a log record (logger "triton_mps", INFO) when a launch or an autotune
    config passes it (Triton's Config defaults to num_stages=3: a warning would be noise)."""
    message = (f"triton-mps: num_stages={num_stages} has no effect: the mps compiler does not software-pipeline "
               "loops (Metal has no async copies); kernels compile as with num_stages=1")
    if warn:
        if not _notified_num_stages[0]:
            _notified_num_stages[0] = True
            warnings.warn(message + " (this notice is shown once)", UserWarning, stacklevel=stacklevel)
    elif not _logged_num_stages[0]:
        _logged_num_stages[0] = True
        logging.getLogger("triton_mps").info(message)


# ---- memory --------------------------------------------------------------------------------

def memory_info(device: Any = None) -> dict[str, int]:
    """The device's memory statistics (see DriverSurface.memory_pool)."""
    dev = _device(device)
    s = dev.pool_stats()
    cfg = dev.pool_config()
    return {
        "current_allocated": s["active_bytes"] + s["wrapped_bytes"],
        "max_allocated": s["peak_total_bytes"],
        "cached": s["cached_bytes"],
        "num_allocs": s["hits"] + s["misses"] + s["num_wraps"],
        "num_frees": s["num_returned"] + s["num_unwraps"],
        "cache_hits": s["hits"],
        "cache_misses": s["misses"],
        # the parts
        "pool_allocated": s["active_bytes"],
        "pool_max_allocated": s["peak_active_bytes"],
        "wrapped": s["wrapped_bytes"],
        "num_wrapped": s["num_wrapped"],
        "num_cached_buffers": s["num_cached_buffers"],
        "device_allocations": s["num_allocations"],
        "max_cached_bytes": cfg["max_cached_bytes"],
        "max_buffer_age_ms": cfg["max_buffer_age_ms"],
    }


# ---- device info ---------------------------------------------------------------------------

def device_info(device: Any = None) -> dict[str, Any]:
    dev = _device(device)
    info = dev.info
    kind = "simulator" if info["is_simulator"] else "metal-emulated" if info["is_emulated"] else "metal"
    name = info["name"]
    chip = next((c for c in sorted(_backend_driver().GPU_CORES, key=len, reverse=True) if c in name), None)
    return {
        "name": name,
        "index": _backend_driver()._index(device),
        "backend": kind,
        "is_simulator": bool(info["is_simulator"]),
        "is_emulated": bool(info["is_emulated"]),
        "chip": chip,
        "generation": info["generation"],
        "gpu_family": info["gpu_family"],
        "unified_memory": bool(info["unified_memory"]),
        "max_threads_per_threadgroup": int(info["max_threads_per_threadgroup"]),
        "max_threadgroup_memory": int(info["max_threadgroup_memory"]),
        "simd_width": int(info["simd_width"]),
        "max_buffer_length": int(info["max_buffer_length"]),
        "max_buffer_bindings": int(info["max_buffer_bindings"]),
        "recommended_working_set": int(info["recommended_working_set"]),
        "msl_version": info["msl_version"],
    }


class DriverSurface:
    """What users call on `MPSDriver()`; mixed into the backend's driver class. `device`
    everywhere: an index, a torch.device, or None for the current device."""

    def set_kernel_config(self, *, num_warps: int | None = None, num_stages: int | None = None,
                          max_threads: int | None = None, shared_memory: int | None = None,
                          device: Any = None) -> dict[str, int]:
        """Defaults for kernels compiled from now on (see the module docstring); returns the
        effective config. ValueError (naming the limit) leaves the previous config in place."""
        return set_kernel_config(device, num_warps=num_warps, num_stages=num_stages, max_threads=max_threads,
                                 shared_memory=shared_memory)

    def get_kernel_config(self, device: Any = None) -> dict[str, int]:
        return get_kernel_config(device)

    def reset_kernel_config(self, device: Any = None) -> None:
        reset_kernel_config(device)

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
        _backend_driver().MPSDeviceInterface.synchronize(device)


# ---- `triton.runtime.driver.MPSDriver` ---------------------------------------------------------

class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback(module)` once `name` has been imported (then removes itself)."""

    def __init__(self, name: str, callback: Callable[[Any], None]):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        inner, callback = spec.loader, self.callback

        class Loader(importlib.abc.Loader):
            def __getattr__(self, attr):  # get_source etc. (tracebacks)
                return getattr(inner, attr)

            def create_module(self, spec):
                return inner.create_module(spec)

            def exec_module(self, module):
                inner.exec_module(module)
                callback(module)

        spec.loader = Loader()
        return spec


def register_on_triton(driver_cls: type) -> None:
    """Make `triton.runtime.driver.MPSDriver` the driver class. `triton.runtime.driver` is
    Triton's DriverConfig instance; the class goes on DriverConfig. Triton discovers backends
    while its `triton.runtime.driver` module is still being imported, so then this waits for
    that import to finish."""

    def attach(module) -> None:
        config_cls = getattr(module, "DriverConfig", None)
        if config_cls is not None:
            config_cls.MPSDriver = driver_cls

    module = sys.modules.get("triton.runtime.driver")
    if module is not None and hasattr(module, "DriverConfig"):
        attach(module)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("triton.runtime.driver", attach))
