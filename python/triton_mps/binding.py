"""Binding a kernel's pointer argument to a device buffer: one rule per kind of object, shared by
the MSL `Kernel` path (runtime.py) and the Triton launcher, whose native fast path binds torch
tensors and triton_mps buffers itself and hands everything else to `bind` (its pointer fallback).

- `triton_mps.Buffer`: itself.
- torch tensor: its whole untyped storage, with the kernel's pointer at `data_ptr()` (CUDA's
  rule: a kernel may address any byte of the allocation, also below its pointer; memcheck
  bounds an access by the region bound). An `mps` tensor's storage is bound as its MTLBuffer
  (its data_ptr() is that handle, not an address). A tensor through which nothing can be
  addressed (an empty storage; a zero-element view whose data_ptr() lies outside its storage)
  binds a placeholder of no bytes, so that memcheck reports any access through it; a tensor
  with elements whose data_ptr() lies outside its storage is refused. The rule has one
  implementation, `torch_tensor_region` (csrc/python/triton_launch.cpp), which the native
  launcher applies on its fast path and `bind_tensor` here through `_core`.
- numpy arrays and other arrays (buffer protocol, DLPack, `__array_interface__`, MLX; arrays.py):
  in place, from the first element to the end of the last (zero-copy: a strided view is bound
  from its first element); an array made by `triton_mps.empty` as a view of its pool buffer.
  Read-only ones are refused where the kernel stores through them; negative strides are refused.
- other objects with `data_ptr()`: a wrapper of a tensor at the same address (Triton's
  `reinterpret` TensorWrapper) binds the tensor; anything else binds the region it addresses:
  its `untyped_storage()`, else its `base`'s, else the extent of its shape and strides around
  `data_ptr()` (negative strides included), with the kernel's pointer at `data_ptr()`.
"""

from __future__ import annotations

import math
from typing import Any

from . import _core
from .arrays import address_of, as_numpy, extent, is_foreign_array, is_torch_tensor, pool_buffer_of

Buffer = _core.Buffer


def bind(obj: Any, device: _core.Device, where: str, writes: bool = True) -> Buffer:
    """The buffer for pointer argument `obj` (see the module docstring). `where` names the
    argument in errors ("kernel 'k': argument 'x'"); `writes`: whether the kernel may store
    through it (read-only arrays are refused only then)."""
    if isinstance(obj, Buffer):
        return obj
    if is_torch_tensor(obj):
        return bind_tensor(obj, device, where)
    if is_foreign_array(obj):
        return bind_array(obj, device, where, writes)
    if hasattr(obj, "data_ptr"):
        return _bind_data_ptr(obj, device, where)
    raise _core.InvalidArgument(
        f"{where} is a pointer; got {type(obj).__name__} (pass a tensor, numpy array or triton_mps buffer)")


def bind_tensor(t: Any, device: _core.Device, where: str) -> Buffer:
    """A torch tensor: its whole storage, the kernel's pointer at data_ptr() (the rule:
    `_core.torch_tensor_region`). The tensor is kept alive with the buffer."""
    kind, base, nbytes, offset = _core.torch_tensor_region(t, device, where)
    if kind == "host":
        return _view_at(device.wrap_host(base, nbytes, t), offset)
    if kind == "native":
        return device.wrap_native(base, offset, nbytes - offset, t)
    return _core.empty_binding(device)


def bind_array(obj: Any, device: _core.Device, where: str, writes: bool = True) -> Buffer:
    """A numpy (or buffer-protocol, DLPack, MLX) array in place, first element to last."""
    try:
        arr = as_numpy(obj)
    except (TypeError, BufferError, RuntimeError, ValueError) as exc:
        raise _core.InvalidArgument(f"{where}: {exc}") from None
    if writes and not arr.flags.writeable:
        raise _core.InvalidArgument(
            f"{where} is a read-only {type(obj).__name__}, but the kernel stores through it; pass a writable "
            "array (e.g. np.array(x) or x.copy())")
    if any(s < 0 for s in arr.strides):
        raise _core.InvalidArgument(f"{where}: arrays with negative strides cannot be bound in place; copy them first")
    nbytes = extent(arr.shape, arr.strides, arr.itemsize)
    address = address_of(arr)
    pooled = pool_buffer_of(arr)
    if pooled is not None and pooled.address <= address and address + nbytes <= pooled.address + pooled.nbytes:
        return pooled.view(address - pooled.address, nbytes)
    # `obj` is kept alive with the numpy view: an MLX or DLPack array's memory is its own.
    return device.wrap_host(address, max(nbytes, 1), (obj, arr))


def _view_at(buf: Buffer, offset: int) -> Buffer:
    return buf.view(offset, buf.nbytes - offset) if offset else buf


# ---- objects with data_ptr() --------------------------------------------------------------------

def _bind_data_ptr(obj: Any, device: _core.Device, where: str) -> Buffer:
    # A wrapper around a tensor (triton.reinterpret's TensorWrapper, which upstream's tests use
    # for every unsigned tensor, and the like): bind what it wraps, at the same address.
    base = obj
    while not is_torch_tensor(base) and hasattr(base, "data_ptr") and hasattr(getattr(base, "base", None), "data_ptr"):
        if int(base.base.data_ptr()) != int(base.data_ptr()):
            break
        base = base.base
    if base is not obj and is_torch_tensor(base):
        return bind_tensor(base, device, where)
    region = _region_of(obj)
    if region is None:
        raise _core.InvalidArgument(f"{where}: a {type(obj).__name__} has data_ptr() but no size (nbytes, "
                                    "or shape/stride and a dtype or element_size()); its size is needed to bind it")
    lo, hi, owner = region
    ptr = int(obj.data_ptr())
    if not lo <= ptr <= hi:
        raise _core.InvalidArgument(f"{where}: a {type(obj).__name__}'s data_ptr() {ptr:#x} lies outside the "
                                    f"memory it views [{lo:#x}, {hi:#x})")
    # Bind the whole region the object addresses, with the kernel's pointer at data_ptr():
    # a view with negative strides reads below data_ptr(), and that is not out of bounds.
    if is_torch_tensor(owner) and owner.device.type == "mps":
        # An mps storage's data_ptr() is its MTLBuffer handle (platform facts), not an address.
        return device.wrap_native(lo, ptr - lo, max(hi - ptr, 1), obj)
    buf = device.wrap_host(lo, max(hi - lo, 1), obj)
    return buf.view(ptr - lo, buf.nbytes - (ptr - lo))


def _region_of(obj: Any) -> tuple[int, int, Any] | None:
    """[lo, hi) bytes a data_ptr() object addresses, and what owns them: its `untyped_storage()`,
    else its `base` tensor's storage, else the span of its shape and strides around data_ptr()."""
    for source in (obj, getattr(obj, "base", None)):
        storage = getattr(source, "untyped_storage", None)
        if callable(storage) and source is not None:
            st = storage()
            lo = int(st.data_ptr())
            return lo, lo + int(st.nbytes()), source
    span = _span(obj)
    if span is None:
        return None
    below, total = span
    lo = int(obj.data_ptr()) - below
    return lo, lo + total, obj


def _span(obj: Any) -> tuple[int, int] | None:
    """(bytes below data_ptr(), bytes in all) a data_ptr() object reaches: its `nbytes`, else the
    extent of its shape and strides (in elements, as torch and Triton count them; negative
    strides reach below data_ptr()) times its element size (`element_size()`, or the size of
    its `dtype`: a torch, numpy or Triton dtype). None when neither is known."""
    item = _item_size(obj)
    shape = getattr(obj, "shape", None)
    dims = None if shape is None else [int(d) for d in shape]
    stride = obj.stride() if callable(getattr(obj, "stride", None)) else None
    below = 0
    if stride is not None and dims is not None and item is not None and all(d != 0 for d in dims):
        below = -sum((d - 1) * int(st) for d, st in zip(dims, stride, strict=True) if int(st) < 0) * item
    nbytes = getattr(obj, "nbytes", None)
    nbytes = nbytes() if callable(nbytes) else nbytes
    if isinstance(nbytes, int):
        return below, nbytes
    if item is None or dims is None:
        return None
    if stride is None:  # contiguous
        return 0, math.prod(dims) * item
    if any(d == 0 for d in dims):
        return 0, 0
    return below, (sum((d - 1) * abs(int(st)) for d, st in zip(dims, stride, strict=True)) + 1) * item


def _item_size(obj: Any) -> int | None:
    if callable(getattr(obj, "element_size", None)):
        return int(obj.element_size())
    dt = getattr(obj, "dtype", None)
    size = getattr(dt, "itemsize", None)  # torch / numpy dtypes
    bits = getattr(dt, "primitive_bitwidth", None)  # Triton dtypes
    return int(size) if isinstance(size, int) else (int(bits) + 7) // 8 if isinstance(bits, int) else None
