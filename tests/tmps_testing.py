"""Helpers shared by the test modules (a plain module: conftest files of several folders
would shadow each other under one name)."""

from __future__ import annotations

import os
import re

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


def linrec_reference(a, b, axis, reverse):
    """Float64 reference of the linear-recurrence scan (x_i = a_i * x_{i-1} + b_i) along `axis`:
    the running products of a and the recurrence of b, as the associative scan combines them."""
    a, b = np.moveaxis(a.astype(np.float64), axis, -1), np.moveaxis(b.astype(np.float64), axis, -1)
    if reverse:
        a, b = a[..., ::-1], b[..., ::-1]
    ra, rb = np.empty_like(a), np.empty_like(b)
    ca, cb = a[..., 0], b[..., 0]
    ra[..., 0], rb[..., 0] = ca, cb
    for i in range(1, a.shape[-1]):
        ca, cb = ca * a[..., i], cb * a[..., i] + b[..., i]
        ra[..., i], rb[..., i] = ca, cb
    if reverse:
        ra, rb = ra[..., ::-1], rb[..., ::-1]
    return np.moveaxis(ra, -1, axis), np.moveaxis(rb, -1, axis)


_MSL32_ONLY = re.compile(r"\b(?:atomic_thread_fence|thread_scope\w*"
                         r"|memory_order_(?:seq_cst|acq_rel|acquire|release|consume)|coherent\s*\()"
                         r"|#\s*pragma\s+METAL\s+fp")


def unguarded_msl32(msl: str) -> list[str]:
    """Lines of `msl` that use MSL 3.2-only API (docs/msl-versions.md) outside an
    `#if __METAL_VERSION__ >= 320` branch: they would not compile for macOS 14 (MSL 3.1)."""
    guarded: list[bool] = []  # one entry per open #if: is this branch 3.2-only?
    found = []
    for line in msl.splitlines():
        code = line.split("//", 1)[0].strip()
        if code.startswith("#if"):
            guarded.append(re.fullmatch(r"#if\s+__METAL_VERSION__\s*>=\s*3[2-9]0", code) is not None
                           or (bool(guarded) and guarded[-1]))
        elif code.startswith(("#else", "#elif")) and guarded:
            outer = len(guarded) > 1 and guarded[-2]
            guarded[-1] = outer  # the #else of a version check is the pre-3.2 branch
        elif code.startswith("#endif") and guarded:
            guarded.pop()
        elif _MSL32_ONLY.search(code) and not (guarded and guarded[-1]):
            found.append(line)
    return found


def collapsed_and_fibers(monkeypatch, run):
    """`run()` with SIMD-groups collapsed (the default), then on one fiber per thread
    (TRITON_MPS_SIM_COLLAPSE=0, read at each dispatch): the two results, to compare bits."""
    monkeypatch.delenv("TRITON_MPS_SIM_COLLAPSE", raising=False)
    collapsed = run()
    monkeypatch.setenv("TRITON_MPS_SIM_COLLAPSE", "0")
    fibers = run()
    monkeypatch.delenv("TRITON_MPS_SIM_COLLAPSE")
    return collapsed, fibers



def pipeline_cache_stats() -> dict:
    """The default device's pipeline-cache counters (hits, misses, ...)."""
    import triton_mps

    return dict(triton_mps.get_device(None).pipeline_cache_stats())


def fresh_scale(request, base: float) -> float:
    """A constexpr value no other test uses (the test's id and the worker's pid): a new MSL text, so
    a new pipeline and a Triton cache miss. `base` keeps the values of two test files apart."""
    return base + (hash((request.node.nodeid, os.getpid())) % 100_000) / 1e6
