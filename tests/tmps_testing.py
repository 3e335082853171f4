"""Helpers shared by the test modules (a plain module: conftest files of several folders
would shadow each other under one name)."""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with a value no correct kernel writes (NaN or 0xA5 bytes)."""
    out = np.empty(shape, dtype=dtype)
    if np.issubdtype(out.dtype, np.floating):
        out.fill(np.nan)
    else:
        out.view(np.uint8).fill(0xA5)
    return out


@triton.jit
def rmw_kernel(ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, NB: tl.constexpr, BLOCK: tl.constexpr):
    """old_ptr[i] = atomic KIND of val_ptr[i] into ptr[i % NB] (add/max/min/and/or/xor/xchg);
    shared by the TTGIR-level atomics tests and the kernel[grid] 64-bit ones."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask)
    slot = ptr + offs % NB
    if KIND == "add":
        old = tl.atomic_add(slot, v, mask=mask)
    elif KIND == "max":
        old = tl.atomic_max(slot, v, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(slot, v, mask=mask)
    elif KIND == "and":
        old = tl.atomic_and(slot, v, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(slot, v, mask=mask)
    elif KIND == "xor":
        old = tl.atomic_xor(slot, v, mask=mask)
    else:
        old = tl.atomic_xchg(slot, v, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)
