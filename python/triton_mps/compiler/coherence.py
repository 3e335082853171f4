"""`coherent(device)` pointers for kernels that order memory between threadgroups (issue 18 item 4).

In MSL 3.2 a device-scope fence orders memory, but plain loads of data other threadgroups stored
during the same dispatch are only guaranteed fresh through a `coherent(device)` pointer; without it
they may hit a non-coherent cache (the "last block reduces" pattern would read stale partials).
So a kernel that emits TMPS_DEVICE_FENCE (known before lowering: effects.module_uses_device_fence)
is lowered with every pointer type spelled `TMPS_COHERENT device T*`: parameters, locals, callee
parameters, atomic helpers' parameters and casts alike, so that the MSL never relies on an
implicit conversion dropping the qualifier (the simulator's strict check reads it as `volatile`
to reject one). The driver's plan decides (`Plan.coherent`); KernelState.coherent carries it to
every spelling of a pointer type (LoweringContext.msl_type, PointerType.msl(coherent=...)).
Below 3.2 the qualifier does not exist and the macro (mslib/macros.py) is empty (the fences are
empty too: docs/msl-versions.md). Kernels without fences never see the macro, so their MSL does
not change.
"""

from __future__ import annotations


def device_ptr(pointee: str, coherent: bool) -> str:
    """`device <pointee>*`, `TMPS_COHERENT device <pointee>*` when the kernel is coherent (the
    plan's `coherent`, kept on KernelState) (`pointee` may be `const T`)."""
    return f"TMPS_COHERENT device {pointee}*" if coherent else f"device {pointee}*"
