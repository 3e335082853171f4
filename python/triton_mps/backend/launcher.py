"""The `mps` launcher: Triton's `launcher_cls(src, metadata)`.

The launch itself is native (csrc/python/triton_launch.cpp); this module builds its argument specs from
the compiled kernel's metadata, wraps kernels with device asserts/prints or 64-bit atomics
(extra hidden buffers), and binds pointer arguments the native launcher has no fast path for
(binding.py: the same rules as the MSL Kernel path).

Launch semantics (csrc/python/triton_launch.cpp, csrc/foreign_stream.h, README "Ordering of launches"):
a launch on our own queue (numpy, CPU tensors, triton_mps buffers) is complete when it returns,
since Triton code reads host memory right after `kernel[grid](...)`; a launch that binds torch
`mps` tensors is encoded into PyTorch's MPS stream and not waited for: PyTorch orders it with
its own work. TRITON_MPS_LAUNCH_SYNC=1 waits after every launch, =0 after none.
"""

from __future__ import annotations

import os
from typing import Any

from .. import binding
from .device import _core, _torch_mps_synchronize

# ---- kernel arguments the native launcher has no fast path for ---------------------------------

def pointer_fallback(written: list[str] | None):
    """fallback(obj, name, kernel, device) for the native launcher: binds a pointer argument that
    is not a torch tensor or a triton_mps buffer (binding.py). `written`: the names of the pointer
    arguments the kernel may store through (None: unknown, all of them)."""
    written_set = None if written is None else frozenset(written)

    def fallback(obj: Any, name: str, kernel: str, device) -> Any:
        writes = written_set is None or name in written_set
        return binding.bind(obj, device, f"kernel '{kernel}': argument '{name}'", writes=writes)

    return fallback


# ---- launcher --------------------------------------------------------------------------------

def _arg_specs(src, metadata) -> tuple[list[tuple[str, str, str]], list[str] | None]:
    """One (kind, name, msl_type) per bound argument, in Triton's order (constexprs: 'skip');
    tuple arguments count as their leaves, depth first (compiler.flatten_signature); and the
    names of the pointer arguments the kernel may store through (None: unknown).

    The compiler saw only the kernel's runtime arguments (backend/compiler.py
    `_runtime_signature`: signature_index counts those); Triton's signature `src.signature`,
    constexprs included, is first known here: compiled argument k is its k-th leaf that is not
    a constexpr. Names and scalar types come from that signature (u64 is i64 in the IR; the
    kernel reads the same 8 bytes)."""
    from ..compiler import flatten_signature
    from ..compiler.types import BY_TRITON

    tmps = metadata.tmps_args
    names = list(src.fn.arg_names) if hasattr(src, "fn") else []  # the Python names, by position
    leaves = flatten_signature({(names[i] if i < len(names) else str(key)): ty
                                for i, (key, ty) in enumerate(src.signature.items())})
    runtime = [i for i, (_, ty) in enumerate(leaves) if ty != "constexpr"]
    specs = [("skip", str(name), "") for name, _ in leaves]
    renamed: dict[str, str] = {}
    for info in tmps["args"]:
        k = info["signature_index"]
        if not 0 <= k < len(runtime):
            raise RuntimeError(f"kernel '{metadata.name}': compiled argument {k} ('{info['name']}') is not in its "
                               f"signature of {len(runtime)} runtime arguments")
        i = runtime[k]
        name, ty = leaves[i]
        msl = info["msl_type"]
        d = BY_TRITON.get(ty) if info["kind"] == "scalar" and isinstance(ty, str) else None
        if d is not None and d.host:
            msl = d.host  # the signature's type: also its signedness
        specs[i] = (info["kind"], str(name), msl)
        renamed[info["name"]] = str(name)
    written = tmps.get("written")
    return specs, None if written is None else [renamed.get(n, n) for n in written]


class TupleLauncher:
    """Flattens tuple arguments (depth first, as the kernel takes them) and host tensor
    descriptors (into their base, shape, strides and flags) before the native launcher, which
    binds one value per signature leaf."""

    def __init__(self, native, signature: dict):
        self.native = native
        self.types = list(signature.values())

    def __getattr__(self, name):
        return getattr(self.native, name)

    def __call__(self, gx, gy, gz, stream, function, *rest):
        # rest: packed metadata, launch metadata, enter hook, exit hook, the kernel's arguments,
        # then any buffers an outer launcher appends
        head, args = rest[:4], rest[4:]
        n = len(self.types)
        flat: list = []
        for a, t in zip(args[:n], self.types, strict=False):
            _flatten_arg(a, t, flat)
        self.native(gx, gy, gz, stream, function, *head, *flat, *args[n:])


def _flatten_arg(value, ty, out: list) -> None:
    from ..compiler import is_descriptor

    if is_descriptor(ty):
        from triton.backends.driver import decompose_descriptor

        if not all(hasattr(value, a) for a in ("base", "shape", "strides")):
            raise TypeError(f"expected a TensorDescriptor for a tensor-descriptor argument, got {type(value).__name__}")
        out.extend(decompose_descriptor(value))
    elif isinstance(ty, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(ty):
            raise TypeError(f"expected a tuple of {len(ty)} values for a tuple argument, got {value!r}")
        for v, t in zip(value, ty, strict=True):
            _flatten_arg(v, t, out)
    else:
        out.append(value)


def launch_wait() -> int:
    """TRITON_MPS_LAUNCH_SYNC: unset -> -1 (launches on our own queue wait, launches on PyTorch's
    MPS stream do not); 1 -> every launch waits (debugging); 0 -> no launch waits (call
    triton_mps.synchronize() before reading results)."""
    value = os.environ.get("TRITON_MPS_LAUNCH_SYNC", "").strip().lower()
    if not value:
        return -1
    if value in ("0", "false", "no", "off"):
        return 0
    if value in ("1", "true", "yes", "on"):
        return 1
    raise ValueError(f"TRITON_MPS_LAUNCH_SYNC must be 0 or 1, got {value!r}")


def make_launcher(src, metadata):
    """Triton's `launcher_cls(src, metadata)`: a native launcher (csrc/python/triton_launch.cpp).

    Kernels with device asserts/prints take one more buffer, bound last (compiler/abi.py):
    they get a DebugLauncher around the native one."""
    debug = metadata.tmps_args.get("debug")
    locks = metadata.tmps_args.get("locks")
    specs, written = _arg_specs(src, metadata)
    if debug:
        specs.append(("pointer", "tmps_debug_records", "uint"))
    if locks:  # bound after the debug buffer (compiler/abi.py)
        specs.append(("pointer", "tmps_lock_table", "uint"))
    native = _core().TritonLauncher(
        kernel=metadata.name,
        specs=specs,
        threads=metadata.num_warps * metadata.warp_size,
        pack_scalars_at=metadata.tmps_args.get("pack_scalars_at", -1),
        fallback=pointer_fallback(written),
        before_mps=_torch_mps_synchronize,  # `mps` tensors without PyTorch's stream API (old torch)
        wait=1 if debug else launch_wait(),  # device prints/asserts are read right after the launch
    )
    from ..compiler import is_descriptor

    if any(isinstance(t, tuple) or is_descriptor(t) for t in src.signature.values()):
        native = TupleLauncher(native, src.signature)
    launcher = LockLauncher(native, int(locks["words"])) if locks else native
    return DebugLauncher(launcher, metadata.name, debug) if debug else launcher


_LOCK_TABLES: dict[int, tuple] = {}  # id(device) -> (device, buffer, words): one zeroed table per device


class LockLauncher:
    """Appends the device's lock table (64-bit atomics, compiler/ops/memory.py) to each launch.
    One table per device: kernels release every lock they take, so it is zero again whenever no
    kernel runs - unless a dispatch was stopped inside a critical section (a memcheck fault, a
    TRITON_MPS_TIMEOUT, Ctrl-C). A launch that raises therefore retires the table; the next
    launch gets a fresh zeroed one (not the old one zeroed in place: work still in flight may
    use it)."""

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
        try:
            self.native(gx, gy, gz, stream, function, *rest, entry[1])
        except BaseException:  # KeyboardInterrupt too: the dispatch may have stopped holding locks
            if _LOCK_TABLES.get(id(dev)) is entry:
                del _LOCK_TABLES[id(dev)]
            raise


class DebugLauncher:
    """Binds a fresh record buffer to each launch, then prints the kernel's device prints and
    raises DeviceAssertionError for failed device asserts (debug_records.py)."""

    def __init__(self, native, kernel: str, debug: dict):
        self.native = native
        self.kernel = kernel
        self.debug = debug

    def __getattr__(self, name):  # threads, kernel, ... of the native launcher
        return getattr(self.native, name)

    def __call__(self, gx, gy, gz, stream, function, *rest):
        from ..compiler import abi
        from .debug_records import report

        capacity = abi.capacity_for(self.debug, gx * gy * gz, int(self.native.threads))
        words = abi.buffer_words(capacity)
        buf = function.device.buffer(words * 4)
        view = buf.bytes_view()[: words * 4].view("uint32")
        abi.init_header(view, capacity)  # the counters; records past them are never read
        self.native(gx, gy, gz, stream, function, *rest, buf)
        if gx and gy and gz:
            report(view, self.debug, self.kernel)
