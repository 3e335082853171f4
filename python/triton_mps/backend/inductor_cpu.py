"""Inductor's CPU target on the `mps` backend: `torch._inductor.config.cpu_backend = "triton"`.

For CPU tensors Inductor generates Triton kernels for the target `GPUTarget("cpu", ...)`, and
looks for a Triton backend *named* `cpu` (`triton_helpers.set_driver_to_cpu`, `has_triton()`,
`TRITON_HAS_CPU` in PyTorch's tests). Off macOS our kernels on CPU tensors run on the simulator,
so with `TRITON_BACKEND=mps` we can serve that target, with no patch to torch or Triton:

- `register_cpu_alias()` adds `backends["cpu"]` = (`MPSCpuTargetBackend`, `MPSCpuDriver`) to
  Triton's backend table while Triton discovers backends (so every process that imports triton
  has it, Inductor's compile workers included), only if our driver is selected and no other
  backend already holds the name. A real `cpu` backend (triton-cpu) discovered after us
  replaces the alias; then the alias claims nothing (`claims_cpu_target`).
- `MPSCpuTargetBackend` compiles a `cpu` target as our own current target: our arch, hence our
  cache key (Triton keys on `backend.hash()`, which names the arch).
- `MPSCpuDriver` is the driver Inductor sets active for CPU kernels: our driver (its state is
  module-level, so a second instance shares it), never counted as a second active driver.
"""

from __future__ import annotations

import sys

from triton.backends.compiler import GPUTarget

from .compiler import MPSBackend
from .driver import ACTIVATION_VALUES, MPSDriver, requested_backend

CPU_BACKEND_NAME = "cpu"


def _selected_by_environment() -> bool:
    """Our driver is the one asked for (cheap: no device is created here)."""
    return requested_backend() in ACTIVATION_VALUES


def _backend_table() -> dict | None:
    """Triton's backend table: `triton.backends.backends`, or, while Triton is still discovering
    backends (it imports this package from inside `_discover_backends`), the dict that function
    is filling in and will publish under that name."""
    module = sys.modules.get("triton.backends")
    table = getattr(module, "backends", None) if module is not None else None
    if isinstance(table, dict):
        return table
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_discover_backends" and frame.f_globals.get("__name__") == "triton.backends":
            table = frame.f_locals.get("backends")
            return table if isinstance(table, dict) else None
        frame = frame.f_back
    return None


def _alias_is_ours(table: dict | None) -> bool:
    entry = table.get(CPU_BACKEND_NAME) if table is not None else None
    return entry is not None and entry.compiler is MPSCpuTargetBackend


def claims_cpu_target() -> bool:
    """We serve Inductor's `cpu` target: our alias holds the name `cpu` and our driver is active."""
    return _alias_is_ours(_backend_table()) and MPSDriver.is_active()


class MPSCpuTargetBackend(MPSBackend):
    """The `mps` compiler for a `cpu` target: compiles for our current device's target."""

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == CPU_BACKEND_NAME and claims_cpu_target()

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)  # checks the claim
        self.target = MPSDriver().get_current_target()


class MPSCpuDriver(MPSDriver):
    """Our driver under the name `cpu`. Not active by itself: the `mps` entry is the one active
    driver Triton counts; Inductor makes this one active explicitly (set_driver_to_cpu)."""

    @staticmethod
    def is_active() -> bool:
        return False


def register_cpu_alias() -> bool:
    """Adds the `cpu` alias to Triton's backend table when our driver is selected and the name
    is free. Returns whether the alias is (now) in the table."""
    if not _selected_by_environment():
        return False
    table = _backend_table()
    if table is None:
        return False
    if CPU_BACKEND_NAME not in table:
        from triton.backends import Backend

        table[CPU_BACKEND_NAME] = Backend(compiler=MPSCpuTargetBackend, driver=MPSCpuDriver)
    return _alias_is_ours(table)
