"""The device side of the `mps` driver: which device is current, its properties, memory
statistics and device info, loading kernels (`utils`), Triton's device interface (Events,
synchronize).

Devices are the native core's (`triton_mps.devices()`); the current device starts as the default
one (Metal on a Mac, the simulator elsewhere; TRITON_MPS_DEVICE overrides). Triton's device
index is the index in that list.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from triton.runtime.errors import OutOfResources

from .. import metal_limits
from .._core import LimitExceeded
from ..chips import bus_width_bits, chip_of
from . import prebuild


def _core():
    from .. import _core as core

    return core


_current = [-1]  # the current device index (resolved on first use)
STREAM = 0  # the stream handle Triton is given: one in-order stream per device, owned by the native core


# ---- devices -------------------------------------------------------------------------------

def _devices() -> list:
    from .. import runtime

    return runtime.devices()


def _index(device: Any) -> int:
    """A device index from what callers pass as a device: an int, None (the current device, as
    `torch.device("cpu").index` and `torch.device("mps").index` are), or an object with an
    `index` (a torch.device; its index None is the current device too)."""
    if hasattr(device, "index") and not isinstance(device, (int, str)):
        device = device.index
    if device is None or isinstance(device, str) and not device.strip().isdigit():
        if _current[0] < 0:
            _current[0] = _default_index()
        return _current[0]
    return int(device)


def _device(device: Any):
    """The native device for `device` (see _index: None is the current device)."""
    index = _index(device)
    all_devices = _devices()
    if not 0 <= index < len(all_devices):
        raise _core().InvalidArgument(f"mps driver: device index {index} out of range ({len(all_devices)} devices)")
    return all_devices[index]


def _default_index() -> int:
    from .. import runtime

    default = runtime.default_device()
    for i, d in enumerate(_devices()):
        if d is default or d.name == default.name and d.is_simulator == default.is_simulator:
            return i
    return len(_devices()) - 1


def _torch_mps_synchronize() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.backends.mps.is_available():
        torch.mps.synchronize()


@functools.cache  # per device index, for the life of the process (devices do not change)
def _device_properties(device: int) -> dict:
    """What Triton launch scripts read of a device, with CUDA's key names:
    max_shared_mem: threadgroup memory per threadgroup, bytes (Metal's maxThreadgroupMemoryLength);
    multiprocessor_count: GPU cores on Metal (from the chip's name); the simulator: CPU cores,
        the threadgroups it runs at once;
    max_num_regs: MAX_NUM_REGS, nominal 32-bit registers per core for one threadgroup (see
        registers_per_thread: with n_regs it gives the threadgroups that fit);
    warpSize: the SIMD-group width (32); max_threads_per_block: threads per threadgroup."""
    dev = _device(device)
    info = dev.info
    if info["is_simulator"]:
        cores = os.cpu_count() or 1
        clock_khz = 1_000_000  # nominal; the simulator has no GPU clock
        bus_width = 64
    else:
        found = chip_of(info["name"])  # triton_mps/chips.py
        cores = found.gpu_cores if found is not None else 8
        clock_khz = 1_400_000  # Apple GPU cores run at ~1.3-1.6 GHz
        bus_width = bus_width_bits(info["name"])
    return {
        "max_shared_mem": int(info["max_threadgroup_memory"] or metal_limits.MAX_THREADGROUP_MEMORY),
        "multiprocessor_count": int(cores),
        "max_num_regs": MAX_NUM_REGS,
        "warpSize": int(info["simd_width"] or 32),
        "max_threads_per_block": int(info["max_threads_per_threadgroup"]),
        "sm_clock_rate": clock_khz,
        "mem_clock_rate": 3_200_000,  # LPDDR5 6400 MT/s
        "mem_bus_width": bus_width,
        "name": info["name"],
        "gpu_family": info["gpu_family"],
        "is_simulator": bool(info["is_simulator"]),
    }


# Registers: Metal reports none per kernel. What it does report is the pipeline's
# maxTotalThreadsPerThreadgroup, which it lowers when a kernel needs more registers per thread
# (the register file is shared by a threadgroup's threads). So a kernel's n_regs is the share of
# the register file each of its maximal threadgroup's threads gets: MAX_NUM_REGS // max threads
# (64 at 1024 threads), an estimate from what Metal exposes, never 0; spills are 0 (unknown).
# With it, the occupancy arithmetic of Triton launch scripts,
#     max_num_regs // (n_regs * warpSize * num_warps),
# gives the threadgroups of num_warps SIMD-groups that fit the pipeline's limit (>= 1 for
# launchable sizes). MAX_NUM_REGS is nominal: 32-bit registers per GPU core for one threadgroup
# (Apple does not document the register file; the simulator has the same figure).
MAX_NUM_REGS = 65536


def registers_per_thread(max_threads: int) -> int:
    """The documented n_regs estimate for a pipeline allowing `max_threads` per threadgroup."""
    return max(1, MAX_NUM_REGS // max(1, max_threads))


# ---- memory --------------------------------------------------------------------------------

def memory_info(device: Any = None) -> dict[str, int]:
    """The device's memory statistics (see MPSDriver.memory_pool)."""
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
    found = chip_of(name)
    return {
        "name": name,
        "index": _index(device),
        "backend": kind,
        "is_simulator": bool(info["is_simulator"]),
        "is_emulated": bool(info["is_emulated"]),
        "chip": found.name if found is not None else None,
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


# ---- utils -------------------------------------------------------------------------------------

class MPSUtils:
    """`driver.active.utils`: loading kernels and device properties."""

    def load_binary(self, name: str, kernel: bytes | str, shared: int, device: Any):
        """Build the pipeline of MSL `kernel` (entry `name`) -> (module, function, regs, spills, max threads)."""
        dev = _device(device)
        # Triton's CompiledKernel checks this before calling us; direct callers get it here.
        limit = self.get_device_properties(device)["max_shared_mem"]
        if shared > limit:
            raise OutOfResources(shared, limit, f"shared memory (threadgroup memory of kernel '{name}')")
        source = kernel.decode("utf-8") if isinstance(kernel, (bytes, bytearray)) else kernel
        request = pipeline_request(dev, source)
        warn_if_unordered(source, request[1])
        limit = int(dev.info["max_threads_per_threadgroup"])
        if dev.info["is_simulator"] and request[0] <= limit and prebuild.workers() > 0:
            # Deferred to the first launch: a simulator pipeline's thread limit is the device's
            # whatever the kernel, so nothing here needs the build. Loading a kernel's autotuning
            # configs then does not wait for their builds; each config's build goes on in the
            # background (prebuild.py) while the configs before it are launched.
            function = _core().TritonFunction(dev, name, limit, functools.partial(build_at_launch, dev, source, name,
                                                                                   request))
            return function, function, registers_per_thread(limit), 0, limit
        function = _core().TritonFunction(dev, build_at_launch(dev, source, name, request))
        max_threads = int(function.max_threads)
        return function, function, registers_per_thread(max_threads), 0, max_threads

    def unload_module(self, module) -> None:
        pass  # pipelines stay in the device's pipeline cache; nothing to free per kernel

    def get_device_properties(self, device: Any = None) -> dict:
        return dict(_device_properties(_index(device)))  # a copy: callers may edit theirs


def pipeline_request(dev, source: str) -> tuple[int, str]:
    """(threads per threadgroup, MSL version) a Triton kernel's MSL is built with on `dev`."""
    from ..compiler.abi import msl_version_for, threads_from_msl

    return threads_from_msl(source), msl_version_for(source, dev.info.get("msl_version", "3.1"))


def build_at_launch(dev, source: str, name: str, request: tuple[int, str]):
    """The pipeline a launch needs now: built here, or joined where it is being built (running
    queued builds on this thread meanwhile: prebuild.help_while_building)."""
    prebuild.help_while_building(source, name)
    try:
        return build_pipeline(dev, source, name, request)
    except LimitExceeded as e:
        # The Metal compiler could not fit the kernel's registers into num_warps * 32
        # threads: OutOfResources, so that Triton's autotuner skips this config.
        raise PipelineThreadLimit(request[0], getattr(e, "limit", 0), f"threads per threadgroup ({e})") from None


def build_pipeline(dev, source: str, name: str, request: tuple[int, str] | None = None, *,
                   background: bool = False):
    """The pipeline of a Triton kernel's MSL on native device `dev`: what load_binary loads and
    backend/prebuild.py builds ahead (the same options, so the same pipeline cache key).
    `request`: pipeline_request(dev, source) when the caller has it. `background`: nobody waits
    for this build (a prebuild): its warnings wait for the next build on a caller's thread, and
    the simulator runs its compilers nicer than us (they yield the CPU to the caller)."""
    max_threads, version = request or pipeline_request(dev, source)
    return dev.compile(source, name, math_mode="safe", strict=True, label=name, max_threads=max_threads,
                       language_version=version, issue_warnings=not background, background=background)


def prebuild_after_compile(*, src: Any, metadata: dict, metadata_group: dict[str, str], times: Any,
                           cache_hit: bool) -> None:
    """Triton's compilation listener (`knobs.compilation.listener`, called at the end of every
    triton.compile; installed by driver.py): a kernel just compiled for an `mps` target starts its
    pipeline's build (prebuild_pipeline), from its `.metal` file in Triton's cache, the binary its
    load_binary gets. "Compiled by us" is read from the options (backend_name "mps"), not from the
    target: Inductor's `cpu` target compiles on our backend too (inductor_cpu.py). Nothing for
    other backends, nor for a Triton cache hit (no compile ran: the pipeline is most likely in the
    native pipeline cache already; load_binary builds it if not)."""
    if cache_hit or metadata.get("backend_name") != "mps":
        return
    path = next((p for f, p in metadata_group.items() if f.endswith(".metal")), None)
    try:
        source = Path(path).read_bytes().decode("utf-8") if path is not None else None
    except OSError:  # (load_binary reads the same file and reports it)
        return
    if source is not None and "name" in metadata:
        prebuild_pipeline(source, metadata["name"])


def prebuild_pipeline(source: str, name: str) -> None:
    """Start building a just-compiled kernel's pipeline on the current device, in the background
    (prebuild.py). In Inductor's compile workers the simulator builds it at once, into its on-disk
    cache, where the process that launches it finds it: the workers build in parallel, and a
    worker's background thread could still be building when the kernel's first launch needs it."""
    try:
        dev = _device(None)
    except Exception:  # noqa: BLE001  (no device: load_binary reports it at the launch)
        return
    if _in_inductor_compile_worker():
        if dev.info["is_simulator"] and prebuild.workers() > 0:
            try:
                build_pipeline(dev, source, name, background=True)
            except Exception:  # noqa: BLE001  (load_binary builds again and raises it at the launch)
                pass
        return
    prebuild.start(prebuild.key_of(source, name), lambda: build_pipeline(dev, source, name, background=True))


def _in_inductor_compile_worker() -> bool:
    utils = sys.modules.get("torch._inductor.compile_worker.utils")
    return utils is not None and not utils.in_toplevel_process()


class PipelineThreadLimit(OutOfResources, LimitExceeded):
    """The Metal compiler could not fit a kernel into the threadgroup size it was compiled for:
    OutOfResources (Triton's autotuner prunes the config) and our LimitExceeded (a ValueError)."""


UNORDERED_WARNING = (
    "triton-mps: this OS has MSL {version} (macOS 14), which has no device-scope memory fence: "
    "acquire/release atomics, 64-bit atomics and acquire atomic_poll order memory between "
    "threadgroups only as far as the GPU happens to (not guaranteed; docs/msl-versions.md). "
    "The atomics themselves stay atomic.")


def warn_if_unordered(msl: str, version: str) -> None:
    """Warn when `msl` asks for ordering between threadgroups that MSL `version` cannot give.
    One message text, so Python's default warning filter shows it once per process."""
    from ..compiler.abi import uses_device_fence, version_tuple

    if uses_device_fence(msl) and version_tuple(version) < (3, 2):
        warnings.warn(UNORDERED_WARNING.format(version=version), RuntimeWarning, stacklevel=3)


# ---- device interface (Events, synchronize) ---------------------------------------------------

class _Event:
    """Host wall-clock after a full synchronize, on both backends.

    Honest limits: Metal has no cheap timestamp between two dispatches of a queue, so an Event
    measures what happened between two synchronizations as seen from the host. For kernel times
    from GPU timestamps use the driver's benchmarker (`get_benchmarker()`).
    """

    def __init__(self, enable_timing: bool = True, **_: Any):
        self.time_ns: int | None = None

    def record(self, stream: Any = None) -> None:
        MPSDeviceInterface.synchronize()
        self.time_ns = time.perf_counter_ns()

    def synchronize(self) -> None:
        pass  # record() already waited

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        if self.time_ns is None or end.time_ns is None:
            raise RuntimeError("elapsed_time needs both events recorded")
        return (end.time_ns - self.time_ns) / 1e6  # milliseconds, like torch


class MPSDeviceInterface:
    Event = _Event

    @staticmethod
    def synchronize(device: Any = None) -> None:
        dev = _device(device)
        dev.synchronize()
        if not dev.is_simulator:
            _torch_mps_synchronize()  # torch's own queue, for work on `mps` tensors

    @staticmethod
    def current_device() -> int:
        return _current[0]

    @staticmethod
    def set_device(device: int) -> None:
        _current[0] = int(device)

    @staticmethod
    def device_count() -> int:
        return len(_devices())

    @staticmethod
    def is_available() -> bool:
        return True


