"""Vectorized tt.load / tt.store: exactness, and vector accesses only where provable."""

import re
import time

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps
import ttgir_harness as th
from triton_mps.compiler import compile_ttgir
from ttgir_harness import bf16_to_f32, f32_to_bf16, poison


def compile_div(fn, signature, constexprs, num_warps=4, divisible=()):
    """Like ttgir_harness.compile_kernel, with `tt.divisibility = 16` on the named args
    (what Triton's specialization does for 16-byte aligned pointers / multiples of 16)."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource

    backend = th._backend()
    opts = backend.parse_options({"num_warps": num_warps})
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in divisible}
    src = ASTSource(fn, signature, {(fn.arg_names.index(k),): v for k, v in constexprs.items()}, attrs)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(backend.target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    th._run_ttir(mod, ctx, num_warps)
    th._run_ttgir(mod, ctx, num_warps)
    t0 = time.perf_counter()
    cm = compile_ttgir(mod, num_warps=num_warps, signature=signature, constants=constexprs,
                       kernel_name=fn.__name__, context=ctx)
    kernel = triton_mps.compile_msl(cm.msl, cm.name, triton_mps.get_device("sim"))
    return th.Compiled(cm, kernel, mod, num_warps, time.perf_counter() - t0)


def vec_loads(msl: str) -> int:
    """How many distinct pointer tensors are read through vector accesses."""
    return len(set(re.findall(r"\*\(device const \w+[24]\*\)\((\w+?)(?:_\d+)?\)", msl)))


def vec_stores(msl: str) -> int:
    return len(re.findall(r"\*\(device \w+[24]\*\)\(.*\) = ", msl))


def alignment_tests(msl: str) -> int:
    """Vector accesses that test their address's alignment at run time (ops/memory.py)."""
    return len(re.findall(r"\(\(\(ulong\)\(\w+\)\) & (?:3|7|15)ul\) == 0ul", msl))


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + SHIFT + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def strided_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + 2 * offs))


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.load(x_ptr + i))


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, stride, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    tl.store(out_ptr + rm * N + rn, tl.load(x_ptr + rm * stride + rn))


_NP = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "i32": np.int32}


def _data(dtype, n, rng):
    f = rng.standard_normal(n) * 20
    if dtype == "bf16":
        return f32_to_bf16(f.astype(np.float32))
    return f.astype(_NP[dtype])


def _f64(dtype, a):
    return bf16_to_f32(a).astype(np.float64) if dtype == "bf16" else a.astype(np.float64)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "i8", "i32"])
@pytest.mark.parametrize("shift", [0, 1])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_add_exact(dtype, shift, num_warps):
    rng = np.random.default_rng()
    block = 1024
    n = 2 * block + 37
    sig = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32",
           "BLOCK": "constexpr", "SHIFT": "constexpr"}
    k = compile_div(add_kernel, sig, {"BLOCK": block, "SHIFT": shift}, num_warps, ("x_ptr", "y_ptr", "out_ptr"))
    x, y = _data(dtype, n + 1, rng), _data(dtype, n, rng)
    out = poison(n, np.uint16 if dtype == "bf16" else _NP[dtype])
    k(x, y, out, n, grid=triton.cdiv(n, block))
    ref = _f64(dtype, x)[shift:shift + n] + _f64(dtype, y)
    if dtype == "bf16":
        ref = bf16_to_f32(f32_to_bf16(ref.astype(np.float32)))
    elif dtype in ("i8", "i32"):
        ref = ref.astype(np.int64).astype(_NP[dtype])
    else:
        ref = ref.astype(_NP[dtype])
    np.testing.assert_array_equal(_f64(dtype, out), ref.astype(np.float64))
    # y and out are aligned: vector accesses under the mask. x + 1 is not provably aligned: its
    # vector access also tests the address at run time (and is never taken: scalar loads).
    assert vec_stores(k.msl) > 0
    assert vec_loads(k.msl) == 2, k.msl
    assert (alignment_tests(k.msl) > 0) == (shift == 1), k.msl


def test_no_divisibility_no_vectors():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
           "SHIFT": "constexpr"}
    k = compile_div(add_kernel, sig, {"BLOCK": 1024, "SHIFT": 0}, 4, ())
    assert vec_loads(k.msl) == 0 and vec_stores(k.msl) == 0


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i8"])
def test_copy_unmasked(dtype):
    rng = np.random.default_rng()
    block = 512
    k = compile_div(copy_kernel, {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "BLOCK": "constexpr"},
                    {"BLOCK": block}, 4, ("x_ptr", "out_ptr"))
    x = _data(dtype, 3 * block, rng)
    out = poison(x.shape, x.dtype)
    k(x, out, grid=3)
    np.testing.assert_array_equal(out, x)
    assert vec_loads(k.msl) > 0 and vec_stores(k.msl) > 0
    assert "if ((" not in k.msl  # no mask: no run test


def test_strided_not_vectorized():
    rng = np.random.default_rng()
    block = 512
    k = compile_div(strided_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"},
                    {"BLOCK": block}, 4, ("x_ptr", "out_ptr"))
    x = rng.standard_normal(2 * block).astype(np.float32)
    out = poison(block, np.float32)
    k(x, out, grid=1)
    np.testing.assert_array_equal(out, x[::2])
    assert vec_loads(k.msl) == 0 and vec_stores(k.msl) > 0


def test_gather_not_vectorized():
    rng = np.random.default_rng()
    block = 512
    k = compile_div(gather_kernel, {"x_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32", "BLOCK": "constexpr"},
                    {"BLOCK": block}, 4, ("x_ptr", "idx_ptr", "out_ptr"))
    x = rng.standard_normal(block).astype(np.float32)
    idx = rng.permutation(block).astype(np.int32)
    out = poison(block, np.float32)
    k(x, idx, out, grid=1)
    np.testing.assert_array_equal(out, x[idx])
    # Only the index load is contiguous (and the store); the gathered load stays scalar.
    assert vec_loads(k.msl) > 0
    assert not re.search(r"\*\(device const float[24]\*\)", k.msl)


@pytest.mark.parametrize("divisible", [("x_ptr", "out_ptr", "stride"), ("x_ptr", "out_ptr")])
def test_2d(divisible):
    rng = np.random.default_rng()
    M, N, stride = 16, 64, 80
    k = compile_div(copy2d_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "M": "constexpr",
                                    "N": "constexpr"}, {"M": M, "N": N}, 4, divisible)
    x = rng.standard_normal(M * stride).astype(np.float32)
    out = poison(M * N, np.float32)
    k(x, out, stride, grid=1)
    np.testing.assert_array_equal(out.reshape(M, N), x.reshape(M, stride)[:, :N])
    assert vec_stores(k.msl) > 0
    # Rows start at rm * stride: aligned only when stride is known divisible by 16; else each
    # row's vector load tests its address (80 floats: always aligned here, so taken).
    assert vec_loads(k.msl) > 0
    assert (alignment_tests(k.msl) > 0) == ("stride" not in divisible), k.msl


@triton.jit
def shifted_copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + (offs + SHIFT)))


@pytest.mark.parametrize("shift, widest, tested", [(2, "float2", False), (4, "float4", False), (3, "float4", True)])
def test_offset_alignment(shift, widest, tested):
    # A 16-byte aligned base plus a constant offset: float4 when it keeps 16 bytes, float2 at 8
    # (proven: no float4 with a test that would always fail), else a float4 that tests its
    # address at run time (here never aligned: scalar loads, still exact).
    rng = np.random.default_rng()
    block = 256
    k = compile_div(shifted_copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr",
                                          "SHIFT": "constexpr"}, {"BLOCK": block, "SHIFT": shift}, 2,
                    ("x_ptr", "out_ptr"))
    x = rng.standard_normal(2 * block + shift).astype(np.float32)
    out = poison(2 * block, np.float32)
    k(x, out, grid=2)
    np.testing.assert_array_equal(out, x[shift:shift + 2 * block])
    loads = set(re.findall(r"\*\(device const (float[24])\*\)", k.msl))
    assert loads == {widest}, k.msl
    assert (alignment_tests(k.msl) > 0) == tested, k.msl
