"""`coherent(device)` pointers for kernels that order memory between threadgroups (issue 18 item 4).

In MSL 3.2 a device-scope fence orders memory, but plain loads of data other threadgroups stored
during the same dispatch are only guaranteed fresh through a `coherent(device)` pointer; without it
they may hit a non-coherent cache (the "last block reduces" pattern would read stale partials).
So a kernel that emits TMPS_DEVICE_FENCE (known before lowering: effects.module_uses_device_fence)
is lowered with every pointer type spelled
`TMPS_COHERENT device T*`: parameters, locals, callee parameters, atomic helpers' parameters and
casts alike, so that the MSL never relies on an implicit conversion dropping the qualifier (the
simulator's strict check reads it as `volatile` to reject one). Below 3.2 the
qualifier does not exist and the macro is empty (the fences are empty too: docs/msl-versions.md).
Kernels without fences never see the macro, so their MSL does not change.
"""

from __future__ import annotations

from contextvars import ContextVar

from .abi import COHERENT

# Set while lowering a kernel that uses device-scope fences (the driver's plan decides, from
# effects.module_uses_device_fence): PointerType.msl() reads it.
COHERENT_POINTERS: ContextVar[bool] = ContextVar("tmps_coherent_pointers", default=False)

COHERENT_KEY = COHERENT  # the annotation (abi.ANNOTATIONS) and the helper's key
COHERENT_HELPER = """#if __METAL_VERSION__ >= 320
#define TMPS_COHERENT coherent(device)
#else
#define TMPS_COHERENT
#endif"""


def device_ptr(pointee: str, coherent: bool | None = None) -> str:
    """`device <pointee>*`, coherent when `coherent` says so, by default while COHERENT_POINTERS
    is set (`pointee` may be `const T`)."""
    if coherent is None:
        coherent = COHERENT_POINTERS.get()
    return f"TMPS_COHERENT device {pointee}*" if coherent else f"device {pointee}*"
