"""Compiler test harness: @triton.jit function -> TTGIR (the backend's own pass tables) -> MSL
-> a kernel on the simulator. A plain module, imported by the tests in this folder."""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton_mps  # noqa: E402
from tmps_testing import poisoned  # noqa: E402
from triton_mps.compiler import compile_ttgir  # noqa: E402


def _backend():
    from triton.backends.compiler import GPUTarget
    from triton_mps.backend.compiler import MPSBackend

    return MPSBackend(GPUTarget("mps", 9, 32))


def _run_ttir(mod, ctx, num_warps: int = 4):
    """The backend's own TTIR stage (its PIPELINE table), as `kernel[grid]` runs it."""
    from triton_mps.backend.compiler import PIPELINE, _run_passes

    b = _backend()
    opts = b.parse_options({"num_warps": num_warps})
    _run_passes(mod, PIPELINE["ttir"], opts, b.target_name(opts), "make_ttir")


def _run_ttgir(mod, ctx, num_warps):
    from triton_mps.backend.compiler import PIPELINE, _run_passes

    b = _backend()
    opts = b.parse_options({"num_warps": num_warps})
    _run_passes(mod, PIPELINE["ttgir"], opts, b.target_name(opts), "make_ttgir")


def make_ttgir(fn, signature: dict, constexprs: dict | None = None, num_warps: int = 4):
    """(module, context) of `fn` specialised to `signature` / `constexprs`, after our passes."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource

    backend = _backend()
    target = backend.target
    opts = backend.parse_options({"num_warps": num_warps})
    constexprs = dict(constexprs or {})
    src = ASTSource(fn, signature, {(fn.arg_names.index(k),): v for k, v in constexprs.items()})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    _run_ttir(mod, ctx, num_warps)
    _run_ttgir(mod, ctx, num_warps)
    return mod, ctx


class Compiled:
    def __init__(self, cm, kernel, mod, num_warps, seconds):
        self.cm = cm
        self.kernel = kernel
        self.mod = mod
        self.num_warps = num_warps
        self.seconds = seconds

    @property
    def msl(self) -> str:
        return self.cm.msl

    def __call__(self, *args, grid=1):
        self.kernel(*args, grid=grid, threads=32 * self.num_warps)
        self.kernel.device.synchronize()


def compile_kernel(fn, signature: dict, constexprs: dict | None = None, num_warps: int = 4, device=None):
    """JIT -> TTGIR -> MSL -> simulator kernel (strict check)."""
    mod, ctx = make_ttgir(fn, signature, constexprs, num_warps)
    t0 = time.perf_counter()
    cm = compile_ttgir(mod, num_warps=num_warps, signature=signature, constants=constexprs or {},
                       kernel_name=fn.__name__, context=ctx)
    seconds = time.perf_counter() - t0
    try:
        kernel = triton_mps.compile_msl(cm.msl, cm.name, device or triton_mps.get_device("sim"))
    except triton_mps.CompileError:
        print(cm.msl)
        raise
    return Compiled(cm, kernel, mod, num_warps, seconds)


poison = poisoned  # the name these tests use for tests/tmps_testing.poisoned


def bf16_to_f32(u16: np.ndarray) -> np.ndarray:
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even (NaN kept quiet)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r
