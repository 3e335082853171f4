"""torch.compile through triton-mps: Inductor's generated Triton kernels on our backend.

    import triton_mps.inductor
    triton_mps.inductor.enable()          # before torch.compile
    torch.compile(model)(x)               # Inductor's Triton kernels run through triton-mps

What `enable()` switches, per device type:
- `mps` tensors (macOS): Inductor generates Metal shaders of its own for `mps` by default
  (`MetalScheduling`). `enable()` registers Triton code generation for `mps` instead
  (`TritonScheduling`, Python wrapper), a device interface that gives Triton our target
  (`get_compute_capability` = our GPU family, a raw stream) and the device-op overrides the
  wrapper needs (stream, synchronize). `disable()` restores PyTorch's Metal code generation.
- CPU tensors: `cpu_backend = "triton"`, run by the simulator (or, on a Mac, by the GPU on
  unified memory). Our backend serves Inductor's `cpu` target only when our driver is selected
  (`TRITON_BACKEND=mps`, set by `enable()` if unset) before `import triton` in each process:
  see backend/inductor_cpu.py.

These are Inductor's own registration APIs (`register_backend_for_device`,
`register_interface_for_device`, `register_device_op_overrides`), plus one answer corrected:
- Inductor's `get_current_backend()` (torch/_inductor/utils.py, torch 2.13) answers "mps" for
  device type `mps` whatever scheduling is registered, and code generation keys on it:
  `upcast_compute_type()` computes fp16/bf16 in float32 only when it answers "triton" (while
  loads are upcast anyway, `config.triton.codegen_upcast_to_fp32`), so a looped reduction got an
  fp16 accumulator re-assigned fp32 values, which Triton rejects ("Loop-carried variable _tmp2
  has initial type fp16 but is re-assigned to fp32"); `runtime_triton_nan_asserts` and the
  runtime dtype/shape asserts of `config.test_configs` were silently off, and `masked`'s result
  dtype came from the rule for Inductor's Metal code. While `mps` is enabled, `get_current_backend` answers
  "triton" for device type `mps` as long as Triton code generation is registered for it (every
  other device type: Inductor's own answer; no other function or config is changed), in the two
  modules that consult it for `mps`: `torch._inductor.utils` (the upcasts) and
  `torch._inductor.codegen.common` (the asserts, `masked`). Inductor's other callers
  (`scheduler.py`, `kernel/mm_common.py`) ask only for `cuda`/`xpu`. `disable()` puts
  Inductor's function back; a module that imported the name while enabled keeps the wrapper,
  which then answers as Inductor does (Metal code generation is registered again).
"""

from __future__ import annotations

import os
from collections import namedtuple
from typing import Any

_saved: dict[str, Any] = {}


def mps_available() -> bool:
    import torch

    return bool(torch.backends.mps.is_available())


def get_raw_stream(device_idx: int = 0) -> int:
    """The stream Triton's launcher is given: the driver's (one in-order stream per device)."""
    from .backend.device import STREAM

    return STREAM


def _our_arch() -> int:
    from .backend.driver import MPSDriver

    return int(MPSDriver().get_current_target().arch)


def _mps_interface() -> type:
    """PyTorch's MPS device interface with what Triton code generation asks of it."""
    from torch._dynamo.device_interface import MpsInterface

    class TritonMpsInterface(MpsInterface):
        @staticmethod
        def get_compute_capability(device: Any = None) -> int:
            return _our_arch()  # GPUTarget("mps", <family>, 32): our arch, as our driver reports it

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return get_raw_stream(device_idx)

        @staticmethod
        def exchange_device(device: int) -> int:
            return 0  # one device; PyTorch's MPS has no device index either

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return 0

        @staticmethod
        def device_count() -> int:
            return 1

        class Worker(MpsInterface.Worker):
            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                # What Inductor's heuristics read (reduction splits, occupancy), from our driver.
                from .backend.driver import MPSDriver

                p = MPSDriver().utils.get_device_properties(0)
                return namedtuple("TritonMpsProperties", "multi_processor_count warp_size max_threads_per_block")(
                    p["multiprocessor_count"], p["warpSize"], p["max_threads_per_block"])

    return TritonMpsInterface


def _mps_op_overrides() -> Any:
    from torch._inductor.codegen.mps_device_op_overrides import MPSDeviceOpOverrides

    class TritonMPSDeviceOpOverrides(MPSDeviceOpOverrides):
        def import_get_raw_stream_as(self, name: str) -> str:
            return f"from triton_mps.inductor import get_raw_stream as {name}"

        def synchronize(self) -> str:
            return "torch.mps.synchronize()"

    return TritonMPSDeviceOpOverrides()


# The modules whose `get_current_backend` global decides something for device type `mps`.
_BACKEND_QUERY_MODULES = ("torch._inductor.utils", "torch._inductor.codegen.common")


def _mps_backend_answer(original: Any) -> Any:
    """Inductor's `get_current_backend`, answering "triton" for device type `mps` while Triton
    code generation is what is registered for it (as Inductor's `ir.is_triton` decides)."""
    from torch._inductor.codegen.common import get_scheduling_for_device
    from torch._inductor.codegen.triton import TritonScheduling

    def get_current_backend(device_type: str | None = None) -> str:
        backend = original(device_type)
        if backend == "mps":
            scheduling = get_scheduling_for_device("mps")
            if isinstance(scheduling, type) and issubclass(scheduling, TritonScheduling):
                return "triton"
        return backend

    get_current_backend.__wrapped__ = original  # type: ignore[attr-defined]
    return get_current_backend


def _patch_backend_answer() -> None:
    import importlib

    saved: dict[str, Any] = {}
    for name in _BACKEND_QUERY_MODULES:
        module = importlib.import_module(name)
        original = module.get_current_backend
        saved[name] = original
        module.get_current_backend = _mps_backend_answer(original)
    _saved["get_current_backend"] = saved


def _unpatch_backend_answer() -> None:
    import importlib

    for name, original in _saved.pop("get_current_backend", {}).items():
        importlib.import_module(name).get_current_backend = original


def _register_mps() -> None:
    from torch._dynamo import device_interface as di
    from torch._inductor.codegen import common
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    common.init_backend_registration()  # PyTorch's defaults first, so that ours replace them
    di.get_interface_for_device("mps")  # likewise for the device interfaces
    _saved["mps_codegen"] = common.device_codegens.get("mps")
    _saved["mps_interface"] = di.device_interfaces.get("mps")
    _saved["mps_op_overrides"] = common.get_device_op_overrides("mps")  # also initializes PyTorch's
    common.register_backend_for_device("mps", TritonScheduling, PythonWrapperCodegen)
    di.register_interface_for_device("mps", _mps_interface())
    common.register_device_op_overrides("mps", _mps_op_overrides())
    _patch_backend_answer()


def _restore_mps() -> None:
    from torch._dynamo import device_interface as di
    from torch._inductor.codegen import common

    if "mps_codegen" not in _saved:
        return
    codegen = _saved.pop("mps_codegen")
    if codegen is None:
        common.device_codegens.pop("mps", None)
    else:
        common.device_codegens["mps"] = codegen
    interface = _saved.pop("mps_interface")
    if interface is not None:
        di.register_interface_for_device("mps", interface)
    overrides = _saved.pop("mps_op_overrides")
    common.register_device_op_overrides("mps", overrides)
    _unpatch_backend_answer()


def enable(mps: bool | None = None) -> None:
    """Route Inductor's kernels through triton-mps: CPU tensors always (cpu_backend="triton");
    `mps` tensors too when `mps` is True (default: when torch's MPS backend is available)."""
    import torch._inductor.config as config

    os.environ.setdefault("TRITON_BACKEND", "mps")  # compile workers started from now on inherit it
    import triton  # noqa: F401  (discovers backends now, with the variable set, if not done yet)

    from .backend.inductor_cpu import register_cpu_alias

    if not register_cpu_alias():
        raise RuntimeError(
            "triton-mps cannot serve Inductor's CPU target: another Triton backend holds the name 'cpu' "
            f"(triton-cpu?), or TRITON_BACKEND={os.environ.get('TRITON_BACKEND')!r} selects another backend")
    if "cpu_backend" not in _saved:
        _saved["cpu_backend"] = config.cpu_backend
    config.cpu_backend = "triton"
    if mps if mps is not None else mps_available():
        if "mps_codegen" not in _saved:
            _register_mps()


def disable() -> None:
    """Undo `enable()`: Inductor's defaults again (C++ for CPU, its own Metal shaders for mps)."""
    import torch._inductor.config as config

    if "cpu_backend" in _saved:
        config.cpu_backend = _saved.pop("cpu_backend")
    _restore_mps()


def enabled_devices() -> list[str]:
    """The device types whose Inductor kernels currently go through triton-mps."""
    import torch._inductor.config as config

    out = ["cpu"] if config.cpu_backend == "triton" else []
    if "mps_codegen" in _saved:
        out.append("mps")
    return out
