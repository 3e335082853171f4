"""Viewing arrays: what memory an array argument is, read without copying it.

numpy arrays, arrays exporting the buffer protocol, `__dlpack__` or `__array_interface__`
(MLX, DLPack producers, ...) are viewed as numpy arrays over their own memory (`as_numpy`);
`triton_mps.empty` arrays lead back to their pool buffer (`pool_buffer_of`); `extent` is the
one byte-extent rule. Binding any of them to a kernel is binding.py; nothing here needs a
device or triton.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core


def is_torch_tensor(obj: Any) -> bool:
    """A torch tensor (also a subclass defined outside torch); never imports torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def is_foreign_array(obj: Any) -> bool:
    """An array bound through numpy: not a torch tensor, no data_ptr()."""
    if isinstance(obj, np.ndarray):
        return True
    if is_torch_tensor(obj) or hasattr(obj, "data_ptr"):
        return False
    if isinstance(obj, (int, float, str, bytes, tuple, np.generic)):
        return False  # numpy scalars export a buffer too, but are scalar arguments
    if hasattr(obj, "__dlpack__") or hasattr(obj, "__array_interface__"):
        return True
    try:
        memoryview(obj).release()
        return True
    except TypeError:
        return False


def _mlx_eval(obj: Any) -> None:
    """MLX arrays are lazy: make sure their memory holds the values before binding it."""
    mod = type(obj).__module__ or ""
    if mod.startswith("mlx"):
        mx = sys.modules.get("mlx.core")
        if mx is not None:
            mx.eval(obj)


def as_numpy(obj: Any) -> np.ndarray:
    """A zero-copy numpy view of `obj`'s memory (with its shape, strides and read-only flag)."""
    if isinstance(obj, np.ndarray):
        return obj
    _mlx_eval(obj)
    try:  # the buffer protocol: zero-copy, carries read-only-ness
        view = memoryview(obj)
    except TypeError:
        view = None
    if view is not None:
        arr = np.asarray(view)
        if arr.dtype.kind == "V" or not view.format:  # e.g. bfloat16 exported as raw bytes
            dtype = getattr(obj, "dtype", None)
            raise TypeError(f"cannot read the element type of a {type(obj).__name__} (dtype {dtype}) from its buffer")
        return arr
    if hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj, copy=False)
        except TypeError:  # numpy < 2.1: no copy argument (never copies)
            return np.from_dlpack(obj)
    if hasattr(obj, "__array_interface__"):
        return np.asarray(obj)
    raise TypeError(f"a {type(obj).__name__} is not an array this backend can bind (no buffer protocol, "
                    "__dlpack__ or __array_interface__)")


def address_of(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def extent(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    """Bytes from the first element to the end of the last one (strides in bytes, non-negative)."""
    if any(int(s) == 0 for s in shape):
        return 0
    if any(st < 0 for st in strides):
        raise _core.InvalidArgument("arrays with negative strides cannot be passed to a kernel; copy them first")
    return sum((int(n) - 1) * int(st) for n, st in zip(shape, strides, strict=True)) + itemsize


# ---- arrays made by triton_mps.empty ------------------------------------------------------------

class PoolBytes:
    """A pool buffer's bytes for numpy: the array's base, so that `pool_buffer_of` finds the
    buffer again (bytes_view()'s base is an opaque nanobind object) and launches bind the pool
    buffer itself rather than re-wrapping its memory as host pages."""

    def __init__(self, buffer: _core.Buffer):
        self.buffer = buffer
        self.__array_interface__ = {
            "shape": (buffer.nbytes,), "typestr": "|u1", "data": (buffer.address, False), "version": 3,
        }


def pool_buffer_of(arr: np.ndarray) -> _core.Buffer | None:
    """The device buffer behind an array made by `empty` (walks the chain of views)."""
    base: Any = arr
    while isinstance(base, np.ndarray | memoryview):
        base = base.obj if isinstance(base, memoryview) else base.base
    return base.buffer if isinstance(base, PoolBytes) else None
