"""Devices, buffers and MSL kernels from Python.

Host arrays reach kernels without copies: numpy arrays and torch CPU tensors are wrapped in
place (the simulator, or page-aligned memory on Metal), torch `mps` tensors by their
`MTLBuffer` and byte offset (the rules: binding.py). Launches are batched; call `synchronize()` before reading results
on the host.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core, binding
from .arrays import PoolBytes, is_foreign_array, is_torch_tensor

Device = _core.Device

_DEVICE_ENV = "TRITON_MPS_DEVICE"


def devices() -> list[Device]:
    """Every device: Metal GPUs first (macOS; on Linux the emulated Metal device), then the simulator."""
    return list(_core.devices())


def _real_metal(all_devices: list[Device]) -> list[Device]:
    return [d for d in all_devices if not d.is_simulator and not d.is_emulated]


def get_device(which: str | int | Device | None = None) -> Device:
    """A device by index, by kind ('metal', 'sim', 'metal-emu'), or the default one for None.

    The default is the first real Metal GPU, else the simulator: the emulated Metal device
    (Linux builds; Metal code paths checked against an emulated Metal runtime) is used only
    when asked for by index or as 'metal-emu'.
    """
    if isinstance(which, _core.Device):
        return which
    all_devices = devices()
    if which is None:
        which = os.environ.get(_DEVICE_ENV, "")
        if which == "":
            real = _real_metal(all_devices)
            return real[0] if real else all_devices[-1]
        try:
            return get_device(which)
        except _core.Error as e:  # the user set this in the environment, not in code: say so
            raise type(e)(f"{_DEVICE_ENV}={which!r}: {e}") from None
    if isinstance(which, int) or (isinstance(which, str) and which.isdigit()):
        index = int(which)
        if not 0 <= index < len(all_devices):
            raise _core.InvalidArgument(
                f"device index {index} out of range: {len(all_devices)} device(s), indices 0 to {len(all_devices) - 1}")
        return all_devices[index]
    kind = str(which).lower()
    if kind in ("sim", "simulator", "cpu"):
        return all_devices[-1]
    if kind in ("metal", "gpu", "mps"):
        real = _real_metal(all_devices)
        if not real:
            raise _core.Unavailable("no Metal device in this process (not a Mac, or Metal unavailable)")
        return real[0]
    if kind in ("metal-emu", "emu", "emulated"):
        emulated = [d for d in all_devices if d.is_emulated]
        if not emulated:
            raise _core.Unavailable("no emulated Metal device in this build (Linux builds with ziglang have one)")
        return emulated[0]
    raise _core.InvalidArgument(
        f"unknown device {which!r}: use an index, 'metal', 'sim' or 'metal-emu' ({_DEVICE_ENV})"
    )


def default_device() -> Device:
    return get_device(None)


def synchronize(device: Device | None = None) -> None:
    """Wait for every launch on `device` (default device if None); raises a dispatch's error."""
    get_device(device).synchronize()


def empty(shape: int | Sequence[int], dtype: Any = np.float32, device: Device | None = None) -> np.ndarray:
    """A numpy array backed by a pooled device buffer (contents undefined)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(int(d) < 0 for d in shape):
        raise _core.InvalidArgument(f"empty(): negative dimension in shape {shape}; sizes must be >= 0")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = get_device(device).buffer(max(nbytes, 1))
    return np.asarray(PoolBytes(buf))[:nbytes].view(dtype).reshape(shape)


def as_buffer(obj: Any, device: Device | None = None) -> _core.Buffer:
    """A device buffer for `obj` without copying: Buffer, numpy array, or torch tensor.

    A numpy array's buffer starts at its first element; a torch tensor's covers its whole
    storage, viewed from data_ptr() (the binding rules: binding.py). The array is kept alive
    with it.
    """
    dev = get_device(device)
    if isinstance(obj, _core.Buffer | np.ndarray) or is_torch_tensor(obj):
        return binding.bind(obj, dev, "as_buffer(): the array")
    raise _core.InvalidArgument(
        f"cannot pass {type(obj).__name__} as a device buffer: use a triton_mps.Buffer, numpy array or torch tensor"
    )


class Kernel:
    """A compiled MSL kernel on one device, callable with arrays, tensors, buffers and scalars."""

    def __init__(self, pipeline: _core.Pipeline, device: Device):
        self.pipeline = pipeline
        self.device = device

    @property
    def name(self) -> str:
        return self.pipeline.name

    @property
    def params(self) -> list[dict]:
        return self.pipeline.params

    def __call__(
        self,
        *args: Any,
        grid: Sequence[int] | int,
        threads: Sequence[int] | int,
        threadgroup_memory: Sequence[tuple[int, int]] = (),
        pack_scalars_at: int = -1,
        timed: bool = False,
    ) -> _core.Timing | None:
        """Dispatch `grid` threadgroups of `threads` threads; arguments in [[buffer(n)]] order."""
        pointer_params = sorted(
            (p for p in self.params if p["kind"] == "buffer"), key=lambda p: p["index"]
        )
        bound = []
        uses_mps = False
        for i, a in enumerate(args):
            uses_mps = uses_mps or (is_torch_tensor(a) and a.device.type == "mps")
            wants_buffer = i < len(pointer_params) and pointer_params[i]["is_pointer"]
            is_array = isinstance(a, np.ndarray) and (wants_buffer or a.ndim > 0)
            where = f"kernel '{self.name}': argument {i}"
            if is_array or is_torch_tensor(a) or isinstance(a, _core.Buffer):
                if wants_buffer:
                    _check_element_type(a, pointer_params[i], self.name)
                    _check_dense(a, pointer_params[i], self.name)
                bound.append(binding.bind(a, self.device, where))
            elif isinstance(a, np.ndarray):  # a 0-d array for a scalar parameter
                bound.append(a.item())
            elif wants_buffer and is_foreign_array(a):  # MLX, DLPack, buffer protocol: in place
                bound.append(binding.bind_array(a, self.device, where))
            else:
                bound.append(a)
        return self.device.launch(
            self.pipeline,
            _dim3(grid, "grid", least=0),
            _dim3(threads, "threads", least=1),
            bound,
            threadgroup_memory=list(threadgroup_memory),
            pack_scalars_at=pack_scalars_at,
            timed=timed,
            # `mps` tensors: encoded on PyTorch's MPS stream, after its earlier ops and before
            # its later ones; where that stream is unavailable, after torch.mps.synchronize().
            before_own=_synchronize_torch_mps if uses_mps else None,
        )


def _synchronize_torch_mps() -> None:
    import torch

    torch.mps.synchronize()


# MSL scalar element types -> (numpy kind letters, bytes). Vector types (float4, ...) take
# arrays of their element type; atomic_T takes T.
_MSL_ELEMENTS = {
    "float": ("f", 4), "half": ("f", 2), "bfloat": ("", 2),
    "int": ("i", 4), "uint": ("u", 4), "short": ("i", 2), "ushort": ("u", 2),
    "char": ("i", 1), "uchar": ("u", 1), "long": ("i", 8), "ulong": ("u", 8), "bool": ("b", 1),
    "int32_t": ("i", 4), "uint32_t": ("u", 4), "int16_t": ("i", 2), "uint16_t": ("u", 2),
    "int8_t": ("i", 1), "uint8_t": ("u", 1), "int64_t": ("i", 8), "uint64_t": ("u", 8),
}
_VECTOR = re.compile(r"^(?:packed_)?([a-z]+?)([234])?$")


def _check_element_type(arr: Any, param: dict, kernel: str) -> None:
    """A float64 array where the kernel reads `float*` (or ints where it reads floats) would be
    reinterpreted silently: refuse it. Integer types take any integer array of their size
    (signed or not), 16-bit floats also 16-bit integer arrays (raw bits; numpy has no
    bfloat16). Structs and unknown types are not checked."""
    t = param["type"].removeprefix("atomic_")
    m = _VECTOR.match(t)
    base = m.group(1) if m else t
    if base not in _MSL_ELEMENTS or isinstance(arr, _core.Buffer):
        return
    dtype = getattr(arr, "dtype", None)
    if dtype is None:
        return
    name = str(dtype).removeprefix("torch.")
    if name == "bfloat16":
        kind, size = "bfloat16", 2
    else:
        npd = np.dtype(name)
        kind, size = npd.kind, npd.itemsize
    want_kinds, want_size = _MSL_ELEMENTS[base]
    if want_kinds in ("i", "u", "b"):
        want_kinds = "iub"  # signedness is the kernel's view of the same bits (Triton's i32 is both)
    raw_bits = base in ("half", "bfloat") and kind in ("i", "u")
    exact = kind in want_kinds if kind != "bfloat16" else base == "bfloat"
    if size == want_size and (exact or raw_bits):
        return
    raise _core.InvalidArgument(
        f"kernel '{kernel}': parameter '{param['name']}' is {param['type']}* but the array holds {name} "
        f"({size}-byte elements); pass an array of the kernel's element type (e.g. .astype(...))")


def _check_dense(arr: Any, param: dict, kernel: str) -> None:
    """An MSL kernel indexes a buffer densely from its first element: a strided view (a
    column, a transpose, x[::2]) would be read as if it were contiguous. Refuse it."""
    if isinstance(arr, np.ndarray):
        dense = arr.flags.c_contiguous
    elif is_torch_tensor(arr):
        dense = arr.is_contiguous()
    else:
        return
    if not dense:
        raise _core.InvalidArgument(
            f"kernel '{kernel}': argument '{param['name']}' is a non-contiguous array (shape {tuple(arr.shape)}, "
            f"strides {tuple(arr.strides) if isinstance(arr, np.ndarray) else tuple(arr.stride())}); a kernel reads "
            "its buffer densely: pass np.ascontiguousarray(a) (torch: a.contiguous())")


def _dim3(v: Sequence[int] | int, what: str, least: int) -> tuple[int, int, int]:
    """`v` as the core's three uint32 dimensions. Only the conversion: what a dispatch accepts is
    build_dispatch's rule (csrc/launcher.cpp; it refuses a zero threadgroup dimension), and
    `least` is that rule's lower bound, named in the message for values no uint32 holds."""
    t = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3:
        raise _core.InvalidArgument(f"{what}: expected 1 to 3 dimensions, got {v!r}")
    if any(not 0 <= x < 2**32 for x in t):
        raise _core.InvalidArgument(f"{what} must be between {least} and 2**32-1 in each dimension, got {v!r}")
    return t + (1,) * (3 - len(t))  # type: ignore[return-value]


_KERNEL_NAME = re.compile(r"\b(?:kernel|\[\[\s*kernel\s*\]\])\s+void\s+(\w+)\s*\(")


def _check_kernel_names(source: str) -> None:
    """`main` (C++ gives it a fixed signature) and the `tmps_` prefix (the simulator's generated
    names) cannot name a kernel: say so instead of showing the C++ compiler's confusion."""
    for name in _KERNEL_NAME.findall(source):
        if name == "main" or name.startswith("tmps_"):
            why = "C++ reserves 'main'" if name == "main" else "names starting with 'tmps_' belong to triton-mps"
            raise _core.CompileError(f"kernel name '{name}' is reserved ({why}): rename the kernel")


def compile_msl(
    source: str,
    entry: str,
    device: Device | None = None,
    *,
    math_mode: str = "safe",
    strict: bool = True,
    macros: dict[str, str] | None = None,
    label: str = "",
    language_version: str = "3.1",
    max_threads: int = 0,
    memcheck: bool | None = None,
) -> Kernel:
    """Compile MSL source and return the kernel `entry` (cached by source, options and device).

    `max_threads`: the threadgroup size it will be dispatched with, if known (Metal budgets
    registers for it); `language_version`: the MSL version asked of Metal; `memcheck`
    (simulator): check every device-memory access against its buffer, None follows
    $TRITON_MPS_MEMCHECK (on unless "0").
    """
    _check_kernel_names(source)
    dev = get_device(device)
    pipeline = dev.compile(
        source, entry, math_mode=math_mode, strict=strict, macros=list((macros or {}).items()), label=label,
        language_version=language_version, max_threads=max_threads, memcheck=memcheck,
    )
    return Kernel(pipeline, dev)
