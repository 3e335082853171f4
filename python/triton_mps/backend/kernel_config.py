"""Kernel-config defaults, per device: what `MPSDriver.set_kernel_config` sets and the compiler
reads (`kernel_config_overrides`, in MPSBackend.parse_options and the JIT binder's cache key).

Every MPSDriver instance shares one state per device: configuration set through one
`MPSDriver()` is what all others (and the active Triton driver) see.

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

import logging
import threading
import warnings
from typing import Any

from .. import metal_limits
from .device import _device, _index

KERNEL_CONFIG_KEYS = ("num_warps", "num_stages", "max_threads", "shared_memory")
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 1

_lock = threading.Lock()
_configs: dict[int, dict[str, int]] = {}  # device index -> the values set (only those)
_notified_num_stages = [False]
_logged_num_stages = [False]


# ---- devices ---------------------------------------------------------------------------------

def current_device_index() -> int:
    return _index(None)


def device_limits(device: Any = None) -> dict[str, int]:
    info = _device(device).info
    return {
        "max_threads_per_threadgroup": int(
            info["max_threads_per_threadgroup"] or metal_limits.MAX_THREADS_PER_THREADGROUP),
        "max_threadgroup_memory": int(info["max_threadgroup_memory"] or metal_limits.MAX_THREADGROUP_MEMORY),
        "simd_width": int(info["simd_width"] or metal_limits.SIMD_WIDTH),
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
    index = _index(device)
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
        cfg = dict(_configs.get(_index(device), {}))
    return {
        "num_warps": cfg.get("num_warps", DEFAULT_NUM_WARPS),
        "num_stages": cfg.get("num_stages", DEFAULT_NUM_STAGES),
        "max_threads": cfg.get("max_threads", limits["max_threads_per_threadgroup"]),
        "shared_memory": cfg.get("shared_memory", limits["max_threadgroup_memory"]),
    }


def reset_kernel_config(device: Any = None) -> None:
    with _lock:
        _configs.pop(_index(device), None)


def kernel_config_overrides() -> dict[str, int]:
    """The values set for the current device (compiler defaults; empty when nothing was set)."""
    if not _configs:  # the common case, on every launch (the JIT binder, jit_hooks.py): no lock, no lookup
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
