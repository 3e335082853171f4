"""The `math.*` MLIR ops of the float64 functions of compiler/mslib/ (math.tan,
math.powf, math.atan2, ...). Triton's `tl` front end has no such functions (libdevice calls
reach the same helpers as tt.extern_elementwise, tests/triton/test_fp64_math_ext.py), but other
producers emit the ops: one kernel of `tl.exp` / `+` on float64 whose TTGIR text gets each
`math.exp` / `arith.addf` renamed to one of the ops, parsed back, compiled and run on the
simulator; each result within 1 ulp of numpy's (libm) on inputs of the function's domain."""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import triton
import triton.language as tl
import triton_mps
from tmps_testing import poisoned
from triton_mps.compiler import compile_ttgir
from ttgir_harness import make_ttgir

BLOCK = 128
N = 200  # not a multiple of BLOCK
UNARY = {  # op -> (numpy function, input range)
    "tan": (np.tan, (-20, 20)), "tanh": (np.tanh, (-20, 20)), "sinh": (np.sinh, (-30, 30)),
    "cosh": (np.cosh, (-30, 30)), "log10": (np.log10, (1e-3, 1e6)), "log1p": (np.log1p, (-0.9, 10)),
    "expm1": (np.expm1, (-5, 5)), "erfc": (None, (-3, 9)), "cbrt": (np.cbrt, (-1e4, 1e4)),
    "asin": (np.arcsin, (-1, 1)), "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-50, 50)),
    "asinh": (np.arcsinh, (-50, 50)), "acosh": (np.arccosh, (1, 50)), "atanh": (np.arctanh, (-1, 1)),
}
BINARY = {"powf": np.power, "atan2": np.arctan2}


@triton.jit
def _ops(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    for i in tl.static_range(15):  # 15 math.exp, renamed to the unary ops in order
        tl.store(out_ptr + i * n + offs, tl.exp(tl.load(x_ptr + i * n + offs, mask=m)), mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    for i in tl.static_range(15, 17):  # 2 arith.addf, renamed to the binary ops
        tl.store(out_ptr + i * n + offs, tl.load(x_ptr + i * n + offs, mask=m) + y, mask=m)


def _renamed(text: str, old: str, names: list[str]) -> str:
    parts = text.split(f" = {old} ")
    assert len(parts) == len(names) + 1, (old, len(parts) - 1)
    return parts[0] + "".join(f" = {new} {rest}" for new, rest in zip(names, parts[1:], strict=True))


def test_fp64_math_ops_lower_and_run():
    from triton._C.libtriton import ir

    sig = {"x_ptr": "*fp64", "y_ptr": "*fp64", "out_ptr": "*fp64", "n": "i32"}
    mod, ctx = make_ttgir(_ops, sig, {"BLOCK": BLOCK}, 4)
    text = _renamed(mod.str(), "math.exp", [f"math.{k}" for k in UNARY])
    text = _renamed(text, "arith.addf", [f"math.{k}" for k in BINARY])
    fd, path = tempfile.mkstemp(suffix=".ttgir")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        mod = ir.parse_mlir_module(path, ctx)
    finally:
        os.unlink(path)
    mod.context = ctx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "float64 is emulated"
        cm = compile_ttgir(mod, num_warps=4, signature=sig, constants={"BLOCK": BLOCK}, kernel_name="_ops",
                           context=ctx)
    for k in list(UNARY) + ["pow", "atan2"]:
        assert f"tmps_f64_{k}(" in cm.msl, k
    kernel = triton_mps.compile_msl(cm.msl, cm.name, triton_mps.get_device("sim"))

    rng = np.random.default_rng(5)
    x = np.stack([rng.uniform(lo, hi, N) for _, (lo, hi) in UNARY.values()]
                 + [rng.uniform(0.1, 4, N), rng.uniform(-5, 5, N)])
    y = rng.uniform(-6, 6, N)
    out = poisoned(17 * N, np.float64)
    u64 = np.uint64  # f64 is `ulong` bits in the MSL
    kernel(x.ravel().view(u64), y.view(u64), out.view(u64), np.int32(N), grid=(triton.cdiv(N, BLOCK),), threads=128)
    kernel.device.synchronize()
    got = out.reshape(17, N)
    import math

    refs = [np.array([math.erfc(v) for v in x[i]]) if f is None else f(x[i])
            for i, (f, _) in enumerate(UNARY.values())]
    refs += [f(x[15 + i], y) for i, f in enumerate(BINARY.values())]
    for i, (name, ref) in enumerate(zip(list(UNARY) + list(BINARY), refs, strict=True)):
        # numpy's libm is within ~1 ulp too: allow 2 ulp of the reference
        err = np.abs(got[i] - ref) / np.spacing(np.abs(ref))
        assert np.all(err <= 2.0), f"{name}: {err.max():.2f} ulp at x={x[i][err.argmax()]!r}"
