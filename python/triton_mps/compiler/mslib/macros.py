"""Guarded macros for what only MSL 3.2 (macOS 15) has: device-scope fences and coherent(device)
pointers (issue 18). Below 3.2 the macros are empty, so the same kernel text compiles for every
language version (docs/msl-versions.md). Entries are named after their macro: the name is the
helper key the emitted text is filed under."""

from __future__ import annotations

from ..abi import COHERENT
from .registry import entry

# The device-scope fence (ops/memory.py): acquire/release atomics, 64-bit atomics and acquire
# atomic_poll (issue 11). Below 3.2 there is no device-scope fence and the call would not compile:
# every use goes through this macro, and ordering between threadgroups is then not guaranteed.
DEVICE_FENCE = "TMPS_DEVICE_FENCE"
entry(DEVICE_FENCE, (), """#if __METAL_VERSION__ >= 320
#define TMPS_DEVICE_FENCE() atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)
#else
#define TMPS_DEVICE_FENCE() ((void)0)
#endif""")

# The qualifier of every pointer type of a kernel that has device-scope fences (coherence.py).
entry(COHERENT, (), """#if __METAL_VERSION__ >= 320
#define TMPS_COHERENT coherent(device)
#else
#define TMPS_COHERENT
#endif""")
