"""The `mps` driver: devices, kernel loading, the launcher, benchmarking.

Activation (`MPSDriver.is_active`):
- TRITON_BACKEND=mps (or metal): active, on any machine (the simulator off macOS). On a machine
  where CUDA or ROCm is active too, also set TRITON_DEFAULT_BACKEND=mps.
- TRITON_BACKEND set to anything else: not active.
- otherwise: active only on macOS with a Metal device. Never on Linux/Windows without the
  variable, so a CUDA or ROCm machine is never taken over.

Devices are the native core's (`triton_mps.devices()`); the current device starts as the default
one (Metal on a Mac, the simulator elsewhere; TRITON_MPS_DEVICE overrides). Triton's device
index is the index in that list.

Launch semantics: a launch is complete when it returns (see csrc/triton_launch.cpp): Triton code
reads outputs right after `kernel[grid](...)`. On Metal, TRITON_MPS_LAUNCH_SYNC=0 makes launches
commit without waiting; call `triton_mps.synchronize()` before reading results then.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
import warnings
from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from ..interop import install_jit_hooks, make_pointer_fallback
from ..mps_driver import DriverSurface, register_on_triton

ACTIVATION_ENV = "TRITON_BACKEND"
ACTIVATION_VALUES = ("mps", "metal")

# Nominal GPU core counts of Apple chips (largest configuration of each; an estimate, since
# binned parts have fewer). Keys are matched against the device name, longest first.
GPU_CORES = {
    "M1 Ultra": 64, "M1 Max": 32, "M1 Pro": 16, "M1": 8,
    "M2 Ultra": 76, "M2 Max": 38, "M2 Pro": 19, "M2": 10,
    "M3 Ultra": 80, "M3 Max": 40, "M3 Pro": 18, "M3": 10,
    "M4 Max": 40, "M4 Pro": 20, "M4": 10,
    "M5 Max": 40, "M5 Pro": 20, "M5": 10,
}
# Memory bus width in bits by tier (LPDDR5/5X), for roofline arithmetic in tutorials.
BUS_WIDTH = {"Ultra": 1024, "Max": 512, "Pro": 256}


def _core():
    from .. import _core as core

    return core


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


# ---- kernel arguments that are not buffers or tensors ---------------------------------------

def _pointer_fallback(obj: Any, name: str, kernel: str, device) -> Any:
    """Buffer for a pointer argument the C++ launcher has no fast path for (numpy, data_ptr())."""
    from .. import runtime

    where = f"kernel '{kernel}': argument '{name}'"
    try:
        import numpy as np

        if isinstance(obj, np.ndarray):
            return runtime.as_buffer(obj, device)
    except ImportError:
        pass
    # A wrapper around a tensor (triton.reinterpret's TensorWrapper, which upstream's tests use
    # for every unsigned tensor, and the like): bind what it wraps, at the same address.
    base = obj
    while not _is_torch_tensor(base) and hasattr(base, "data_ptr") and hasattr(getattr(base, "base", None), "data_ptr"):
        if int(base.base.data_ptr()) != int(base.data_ptr()):
            break
        base = base.base
    if base is not obj and _is_torch_tensor(base):
        return runtime.as_buffer(base, device)
    if hasattr(obj, "data_ptr"):
        if not device.is_simulator:
            raise _core().InvalidArgument(
                f"{where}: a {type(obj).__name__} with data_ptr() cannot be bound on Metal (its memory is "
                "unknown to Metal); pass an 'mps' tensor, a numpy array or a triton_mps buffer"
            )
        nbytes = _nbytes_of(obj)
        if nbytes is None:
            raise _core().InvalidArgument(f"{where}: a {type(obj).__name__} has data_ptr() but no size (nbytes, "
                                          "or shape/stride and a dtype or element_size()); its size is needed to "
                                          "bind it")
        return device.wrap_host(int(obj.data_ptr()), max(nbytes, 1), obj)
    raise _core().InvalidArgument(
        f"{where} is a pointer; got {type(obj).__name__} (pass a tensor, numpy array or triton_mps buffer)"
    )


def _is_torch_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _nbytes_of(obj: Any) -> int | None:
    """Bytes a data_ptr() object spans: its `nbytes`, else the extent of its shape and strides
    (in elements, as torch and Triton count them) times its element size (`element_size()`,
    or the size of its `dtype`, a torch, numpy or Triton dtype)."""
    nbytes = getattr(obj, "nbytes", None)
    nbytes = nbytes() if callable(nbytes) else nbytes
    if isinstance(nbytes, int):
        return nbytes
    item = None
    if callable(getattr(obj, "element_size", None)):
        item = int(obj.element_size())
    else:
        dt = getattr(obj, "dtype", None)
        size = getattr(dt, "itemsize", None)  # torch / numpy dtypes
        bits = getattr(dt, "primitive_bitwidth", None)  # Triton dtypes
        item = int(size) if isinstance(size, int) else (int(bits) + 7) // 8 if isinstance(bits, int) else None
    shape = getattr(obj, "shape", None)
    if item is None or shape is None:
        return None
    shape = [int(d) for d in shape]
    stride = obj.stride() if callable(getattr(obj, "stride", None)) else None
    if stride is None:  # contiguous
        return math.prod(shape) * item
    if any(d == 0 for d in shape):
        return 0
    return (sum((d - 1) * abs(int(st)) for d, st in zip(shape, stride, strict=True)) + 1) * item


def _torch_mps_synchronize() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.backends.mps.is_available():
        torch.mps.synchronize()


# ---- launcher --------------------------------------------------------------------------------

def _arg_specs(src, metadata) -> list[tuple[str, str, str]]:
    """One (kind, name, msl_type) per bound argument, in Triton's order (constexprs: 'skip')."""
    tmps = metadata.tmps_args
    by_position = {a["signature_index"]: a for a in tmps["args"]}
    signature = src.signature
    names = list(signature.keys())
    if hasattr(src, "fn"):
        names = list(src.fn.arg_names)
    specs = []
    for i, (key, ty) in enumerate(signature.items()):
        if isinstance(ty, tuple):
            raise NotImplementedError(
                f"kernel '{metadata.name}': tuple argument '{key}' is not supported by the mps launcher")
        info = by_position.get(i)
        name = names[i] if i < len(names) else str(key)
        if info is None:
            specs.append(("skip", str(name), ""))
        else:
            specs.append((info["kind"], info["name"], info["msl_type"]))
    missing = set(by_position) - set(range(len(signature)))
    if missing:
        raise RuntimeError(f"kernel '{metadata.name}': compiled arguments at signature positions {sorted(missing)} "
                           f"are not in its signature of {len(signature)}")
    return specs


def make_launcher(src, metadata):
    """Triton's `launcher_cls(src, metadata)`: a native launcher (csrc/triton_launch.cpp).

    Kernels with device asserts/prints take one more buffer, bound last (compiler/abi.py):
    they get a DebugLauncher around the native one."""
    sync = os.environ.get("TRITON_MPS_LAUNCH_SYNC", "1").strip() not in ("0", "false", "no")
    debug = metadata.tmps_args.get("debug")
    locks = metadata.tmps_args.get("locks")
    specs = _arg_specs(src, metadata)
    if debug:
        specs.append(("pointer", "tmps_debug_records", "uint"))
    if locks:  # bound after the debug buffer (compiler/abi.py)
        specs.append(("pointer", "tmps_lock_table", "uint"))
    native = _core().TritonLauncher(
        kernel=metadata.name,
        specs=specs,
        threads=metadata.num_warps * metadata.warp_size,
        pack_scalars_at=metadata.tmps_args.get("pack_scalars_at", -1),
        fallback=make_pointer_fallback(metadata.tmps_args.get("written"), _pointer_fallback),
        before_mps=_torch_mps_synchronize,
        sync=sync or bool(debug),  # records are read right after the launch
    )
    launcher = LockLauncher(native, int(locks["words"])) if locks else native
    return DebugLauncher(launcher, metadata.name, debug) if debug else launcher


_LOCK_TABLES: dict[int, tuple] = {}  # id(device) -> (device, buffer, words): one zeroed table per device


class LockLauncher:
    """Appends the device's lock table (64-bit atomics, compiler/ops/memory.py) to each launch.
    One table per device for the life of the process: kernels release every lock they take,
    so it is zero again whenever no kernel runs."""

    def __init__(self, native, words: int):
        self.native = native
        self.words = words

    def __getattr__(self, name):
        return getattr(self.native, name)

    def __call__(self, gx, gy, gz, stream, function, *rest):
        dev = function.device
        entry = _LOCK_TABLES.get(id(dev))
        if entry is None or entry[2] < self.words:
            buf = dev.buffer(self.words * 4)
            buf.bytes_view()[: self.words * 4].view("uint32")[:] = 0
            entry = _LOCK_TABLES[id(dev)] = (dev, buf, self.words)
        self.native(gx, gy, gz, stream, function, *rest, entry[1])


class DebugLauncher:
    """Binds a fresh record buffer to each launch, then prints the kernel's device prints and
    raises DeviceAssertionError for failed device asserts (compiler/ops/debug.py)."""

    def __init__(self, native, kernel: str, debug: dict):
        self.native = native
        self.kernel = kernel
        self.debug = debug

    def __getattr__(self, name):  # threads, kernel, ... of the native launcher
        return getattr(self.native, name)

    def __call__(self, gx, gy, gz, stream, function, *rest):
        from ..compiler.ops import debug as debug_ops

        words = debug_ops.HEADER_WORDS + int(self.debug["capacity"]) * debug_ops.RECORD_WORDS
        buf = function.device.buffer(words * 4)
        view = buf.bytes_view()[: words * 4].view("uint32")
        view[0] = 0  # the record count; records past it are never read
        self.native(gx, gy, gz, stream, function, *rest, buf)
        if gx and gy and gz:
            debug_ops.report(view, self.debug, self.kernel)


@functools.cache  # per device index, for the life of the process (devices do not change)
def _device_properties(device: int) -> dict:
    dev = _device(device)
    info = dev.info
    if info["is_simulator"]:
        cores = os.cpu_count() or 1
        clock_khz = 1_000_000  # nominal; the simulator has no GPU clock
        bus_width = 64
    else:
        name = info["name"]
        longest_first = sorted(GPU_CORES.items(), key=lambda kv: -len(kv[0]))  # "M3 Max" before "M3"
        cores = next((n for chip, n in longest_first if chip in name), 8)
        clock_khz = 1_400_000  # Apple GPU cores run at ~1.3-1.6 GHz
        bus_width = next((w for tier, w in BUS_WIDTH.items() if tier in name), 128)
    return {
        "max_shared_mem": int(info["max_threadgroup_memory"] or 32768),
        "multiprocessor_count": int(cores),
        "max_num_regs": 65536,
        "warpSize": int(info["simd_width"] or 32),
        "max_threads_per_block": int(info["max_threads_per_threadgroup"]),
        "sm_clock_rate": clock_khz,
        "mem_clock_rate": 3_200_000,  # LPDDR5 6400 MT/s
        "mem_bus_width": bus_width,
        "name": info["name"],
        "gpu_family": info["gpu_family"],
        "is_simulator": bool(info["is_simulator"]),
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
            from triton.runtime.errors import OutOfResources

            raise OutOfResources(shared, limit, f"shared memory (threadgroup memory of kernel '{name}')")
        source = kernel.decode("utf-8") if isinstance(kernel, (bytes, bytearray)) else kernel
        from .compiler import msl_version_for, threads_from_msl

        pipeline = dev.compile(source, name, math_mode="safe", strict=True, label=name,
                               max_threads=threads_from_msl(source),
                               language_version=msl_version_for(source, dev.info.get("msl_version", "3.1")))
        function = _core().TritonFunction(dev, pipeline)
        # Registers and spills are not reported by Metal; 0 keeps tutorials' arithmetic harmless.
        return function, function, 0, 0, pipeline.max_total_threads_per_threadgroup

    def unload_module(self, module) -> None:
        pass  # pipelines stay in the device's pipeline cache; nothing to free per kernel

    def get_device_properties(self, device: Any = None) -> dict:
        return dict(_device_properties(_index(device)))  # a copy: callers may edit theirs


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


_current = [-1]  # the current device index (resolved on first use)


# ---- benchmarking ------------------------------------------------------------------------------

def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """triton.testing.do_bench, timed by the device's timestamps of our dispatches.

    Each sample is the sum of (end - start) of the dispatches `fn` made (GPU timestamps on Metal;
    the simulator's execution time of each dispatch there). If `fn` makes no dispatch through
    the mps launcher (e.g. only torch ops), falls back to triton.testing.do_bench.
    """
    import triton.testing as tt

    core = _core()
    driver = _active_driver()
    di = driver.get_device_interface()

    fn()
    di.synchronize()
    core.triton_timing_capture(True)
    try:
        cache = driver.get_empty_cache_for_benchmark()
        t0 = time.perf_counter()
        for _ in range(5):
            driver.clear_cache(cache)
            fn()
        di.synchronize()
        estimate_ms = (time.perf_counter() - t0) * 1e3 / 5
        if not core.triton_take_timings():
            core.triton_timing_capture(False)
            return tt.do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                               return_mode=return_mode)
        n_warmup = max(1, int(warmup / max(estimate_ms, 1e-3)))
        n_repeat = max(1, int(rep / max(estimate_ms, 1e-3)))
        for _ in range(n_warmup):
            fn()
        di.synchronize()
        core.triton_take_timings()
        samples = []
        for _ in range(n_repeat):
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            driver.clear_cache(cache)
            fn()
            samples.append(core.triton_take_timings())
        di.synchronize()  # fills the timings of the last launches on Metal
    finally:
        core.triton_timing_capture(False)
    times = [sum(t.elapsed_ns for t in s) / 1e6 for s in samples]
    return tt._summarize_statistics(times, quantiles, return_mode)


def _active_driver():
    from triton.runtime.driver import driver

    return driver.active


# ---- the driver ----------------------------------------------------------------------------------

_CPP_TYPES = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u1": "bool", "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "fp16": "half", "bf16": "bfloat", "fp32": "float", "f32": "float", "fp64": "double",
}


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


class MPSDriver(DriverSurface, DriverBase):
    """Triton's driver for `mps`; its user API (kernel config, memory_pool, device_info, ...) is
    DriverSurface (triton_mps/mps_driver.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.utils = MPSUtils()
        self.launcher_cls = make_launcher
        install_jit_hooks()  # numpy/MLX/DLPack array arguments, kernel-config cache keys (interop.py)
        if _current[0] < 0:
            _current[0] = _default_index()

    @staticmethod
    def is_active() -> bool:
        wanted = os.environ.get(ACTIVATION_ENV, "").strip().lower()
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
        return 0  # one in-order stream per device, owned by the native core

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
        if ty.startswith("*"):
            return f"device {_CPP_TYPES.get(ty[1:], ty[1:])}*"
        return _CPP_TYPES[ty]

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
            "launch_sync": os.environ.get("TRITON_MPS_LAUNCH_SYNC", "1"),
            "pool": dev.pool_config(),
        }


register_on_triton(MPSDriver)  # triton.runtime.driver.MPSDriver
