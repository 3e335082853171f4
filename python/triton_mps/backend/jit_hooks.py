"""Triton's JIT binder for `mps` kernels: array arguments other than torch tensors, and the
kernel-config defaults in the kernel cache key.

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
  the `mps` backend the binder is wrapped (`install_jit_hooks`, here): when the fast native
  binder fails on such an argument, a second binder specializes it through a `SpecView` (the
  array's dtype and address). The cached launch path is unchanged for torch tensors.
- The launcher's pointer fallback binds the array's memory (binding.py).

Read-only arrays (numpy `writeable=False`, read-only buffers, DLPack read-only tensors) are
accepted where the kernel only reads them; passed for a pointer the kernel stores through
(any store or atomic the compiler finds reachable from it, `compiler/effects.py`), the launch
raises InvalidArgument naming the argument, before anything runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .. import _core
from ..arrays import as_numpy, is_foreign_array


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


def reject_untyped_buffers(kernel: str, names: list[str], args: tuple, kwargs: dict) -> None:
    """A triton_mps.Buffer is bytes without an element type, which a Triton pointer argument
    needs (*fp32, *i64, ...): raise InvalidArgument naming the argument, rather than Triton's
    "failed to specialize" (guessing a type would run the kernel on wrongly typed memory)."""
    for name, value in [*zip(names, args, strict=False), *kwargs.items()]:
        if isinstance(value, _core.Buffer):
            raise _core.InvalidArgument(
                f"kernel '{kernel}': argument '{name}' is a triton_mps.Buffer, which has no element type: "
                f"pass a typed array over its memory (e.g. buf.bytes_view().view(numpy.float32), no copy) or "
                f"allocate with triton_mps.empty(shape, dtype)")


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
    - adds the kernel-config defaults (kernel_config.set_kernel_config) to the options that key
      Triton's in-memory kernel cache, so a kernel is recompiled after the defaults change."""
    if _installed[0]:
        return
    import triton.runtime.jit as jit

    from .compiler import MPSBackend
    from .kernel_config import kernel_config_overrides

    original = jit.create_function_from_signature

    def create_function_from_signature(sig, kparams, backend):
        # Triton's JITFunction.create_binder calls this; its `self` names the kernel for errors.
        jit_fn = sys._getframe(1).f_locals.get("self")
        kernel = str(getattr(jit_fn, "__name__", None) or getattr(getattr(jit_fn, "fn", None), "__name__", "?"))
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
                reject_untyped_buffers(kernel, list(sig.parameters), args, kwargs)
                bound, specialization, options = slow(*args, **kwargs)
            overrides = kernel_config_overrides()
            if overrides:
                options = {**options, "_tmps_kernel_config": tuple(sorted(overrides.items()))}
            return bound, specialization, options

        return binder

    jit.create_function_from_signature = create_function_from_signature
    _installed[0] = True
