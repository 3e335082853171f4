"""Arrays other than torch tensors as Triton kernel pointer arguments.

`kernel[grid](x, ...)` accepts, for a pointer argument, besides torch tensors and
`triton_mps.empty(...)` arrays: numpy arrays, MLX arrays, and any object exporting the buffer
protocol or `__dlpack__` (CPU memory). They are bound in place, never copied (zero-copy: writes are
visible to the caller after the launch; a strided view is bound from its first element, so
the strides the kernel is given address the caller's memory). Memory must be CPU-addressable:
host memory on the simulator, unified memory on a Mac. A bare `triton_mps.Buffer` has no
element type, which Triton's pointer types need: it is refused (InvalidArgument naming the
argument); a typed view of it (`buf.bytes_view().view(np.float32)`) is bound in place.

Two places need them:
- Triton's JIT specialization (`failed to specialize argument of type: ndarray`): Triton's
  native specializer only knows torch tensors and objects with `data_ptr()`. For kernels of
  the `mps` backend the binder is wrapped (`install_jit_hooks`): when the fast native binder
  fails on such an argument, a second binder specializes it through a `SpecView` (the
  array's dtype and address). The cached launch path is unchanged for torch tensors.
- The launcher's pointer fallback (`pointer_fallback`): binds the array's memory.

Read-only arrays (numpy `writeable=False`, read-only buffers, DLPack read-only tensors) are
accepted where the kernel only reads them; passed for a pointer the kernel stores through
(any store or atomic the compiler finds reachable from it, `compiler/effects.py`), the launch
raises InvalidArgument naming the argument, before anything runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

# ---- recognising and viewing arrays ------------------------------------------------------------


def _is_torch_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def is_foreign_array(obj: Any) -> bool:
    """An array the launcher binds through numpy: not a torch tensor, no data_ptr()."""
    if isinstance(obj, np.ndarray):
        return True
    if _is_torch_tensor(obj) or hasattr(obj, "data_ptr"):
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


class SpecView:
    """What Triton's specializer reads of a tensor argument: `dtype` and `data_ptr()`."""

    __slots__ = ("dtype", "_address")

    def __init__(self, obj: Any):
        arr = as_numpy(obj)
        # Triton canonicalizes str(dtype).split(".")[-1]: numpy names ("float32") are Triton's
        # names; a foreign dtype (mlx.core.bfloat16) keeps its own name for bfloat16.
        name = str(getattr(obj, "dtype", arr.dtype)).split(".")[-1]
        self.dtype = name if name == "bfloat16" else str(arr.dtype)
        self._address = int(arr.__array_interface__["data"][0])

    def data_ptr(self) -> int:
        return self._address


def reject_untyped_buffers(names: list[str], args: tuple, kwargs: dict) -> None:
    """A triton_mps.Buffer is bytes without an element type, which a Triton pointer argument
    needs (*fp32, *i64, ...): raise InvalidArgument naming the argument, rather than Triton's
    "failed to specialize" (guessing a type would run the kernel on wrongly typed memory)."""
    from . import _core

    for name, value in [*zip(names, args, strict=False), *kwargs.items()]:
        if isinstance(value, _core.Buffer):
            raise _core.InvalidArgument(
                f"argument '{name}' is a triton_mps.Buffer, which has no element type: pass a typed array over "
                f"its memory (e.g. buf.bytes_view().view(numpy.float32), no copy) or allocate with "
                f"triton_mps.empty(shape, dtype)")


def tolerant_specialize(native: Callable) -> Callable:
    def specialize(backend, arg, is_const, specialize_value, align):
        if is_foreign_array(arg):
            arg = SpecView(arg)
        return native(backend, arg, is_const, specialize_value, align)

    return specialize


# ---- the JIT binder (and the kernel-config cache key) ------------------------------------------

_installed = [False]


def install_jit_hooks() -> None:
    """Wrap Triton's binder factory for `mps` kernels (idempotent). The binder then:
    - retries the specialization with `tolerant_specialize` when the native one fails on an
      array argument (the common torch-tensor path stays native);
    - adds the kernel-config defaults (mps_driver.set_kernel_config) to the options that key
      Triton's in-memory kernel cache, so a kernel is recompiled after the defaults change."""
    if _installed[0]:
        return
    import triton.runtime.jit as jit

    from .backend.compiler import MPSBackend
    from .mps_driver import kernel_config_overrides

    original = jit.create_function_from_signature

    def create_function_from_signature(sig, kparams, backend):
        fast = original(sig, kparams, backend)
        if not isinstance(backend, MPSBackend):
            return fast
        slow = original(sig, kparams, backend)  # its own namespace: patch the specializer there only
        slow.__globals__["specialize_impl"] = tolerant_specialize(slow.__globals__["specialize_impl"])

        def binder(*args, **kwargs):
            try:
                bound, specialization, options = fast(*args, **kwargs)
            except TypeError as exc:
                if "failed to specialize" not in str(exc):
                    raise
                reject_untyped_buffers(list(sig.parameters), args, kwargs)
                bound, specialization, options = slow(*args, **kwargs)
            overrides = kernel_config_overrides()
            if overrides:
                options = {**options, "_tmps_kernel_config": tuple(sorted(overrides.items()))}
            return bound, specialization, options

        return binder

    jit.create_function_from_signature = create_function_from_signature
    _installed[0] = True


# ---- the launcher's pointer fallback -------------------------------------------------------------

def make_pointer_fallback(written: Iterable[str] | None, other: Callable) -> Callable:
    """fallback(obj, name, kernel, device) for the native launcher: foreign arrays here,
    everything else (data_ptr() objects) to `other`. `written`: the names of the pointer
    arguments the kernel may store through (None: unknown, all of them)."""
    written_set = None if written is None else frozenset(written)

    def fallback(obj: Any, name: str, kernel: str, device) -> Any:
        if not is_foreign_array(obj):
            return other(obj, name, kernel, device)
        return bind_array(obj, device, f"kernel '{kernel}': argument '{name}'",
                          writes=written_set is None or name in written_set)

    return fallback


def bind_array(obj: Any, device, where: str, writes: bool):
    """A Buffer over `obj`'s memory (no copy), from its first element to its last."""
    from . import _core, runtime

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
    pooled = runtime._pool_buffer_of(arr)
    nbytes = runtime._extent(arr.shape, arr.strides, arr.itemsize)
    address = int(arr.__array_interface__["data"][0])
    if pooled is not None and pooled.address <= address and address + nbytes <= pooled.address + pooled.nbytes:
        return pooled.view(address - pooled.address, nbytes)
    # `obj` is kept alive with the numpy view: an MLX or DLPack array's memory is its own.
    return device.wrap_host(address, max(nbytes, 1), (obj, arr))
