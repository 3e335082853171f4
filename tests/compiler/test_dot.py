"""tt.dot on the simulator: both lowerings (FMA, simdgroup_matrix), every input dtype, with and
without an accumulator, num_warps 1-8, and a tiled matmul with a K loop against torch (float64)."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton_mps.compiler import compile_ttgir
from triton_mps.compiler.layout import Layout
from triton_mps.compiler.ops import dot as dot_mod
from ttgir_harness import bf16_to_f32, f32_to_bf16, make_ttgir, poison


class Kernel:
    def __init__(self, fn, signature, constexprs, num_warps):
        mod, ctx = make_ttgir(fn, signature, constexprs, num_warps)
        self.ttgir = str(mod)
        t0 = time.perf_counter()
        self.cm = compile_ttgir(mod, num_warps=num_warps, signature=signature, constants=constexprs,
                                kernel_name=fn.__name__, context=ctx)
        self.lower_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            self.kernel = triton_mps.compile_msl(self.cm.msl, self.cm.name, triton_mps.get_device("sim"))
        except triton_mps.CompileError:
            print(self.cm.msl)
            raise
        self.sim_seconds = time.perf_counter() - t0
        self.num_warps = num_warps

    @property
    def msl(self):
        return self.cm.msl

    def __call__(self, *args, grid=1):
        self.kernel(*args, grid=grid, threads=32 * self.num_warps)
        self.kernel.device.synchronize()


PATH_MARK = {"fma": "FMA from registers", "simdgroup": "simdgroup_matrix 8x8",
             "scratch": "FMA with operands through threadgroup memory"}


def expected_path(path, M, N, K, dtype):
    if path == "simdgroup" and (M % 8 or N % 8 or K % 8 or dtype == "int8"):
        return "fma"  # simdgroup applies only where the shapes and types allow
    return path


# ---- inputs -----------------------------------------------------------------------------------
NP = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8}


def rand_input(rng, shape, dtype):
    """(array passed to the kernel, its exact values in float64)."""
    if dtype == "int8":
        x = rng.integers(-128, 128, size=shape, dtype=np.int8)
        return x, x.astype(np.float64)
    f = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bf16":
        u = f32_to_bf16(f)
        return u, bf16_to_f32(u).astype(np.float64)
    x = f.astype(NP[dtype])
    return x, x.astype(np.float64)


SIG = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "int8": "i8"}


def acc_info(dtype):
    """(kernel type string, numpy type) of the fp32/int32 accumulator for `dtype` inputs."""
    return ("i32", np.int32) if dtype == "int8" else ("fp32", np.float32)


def check(got, ref, dtype, K, out="fp32"):
    if dtype == "int8":
        np.testing.assert_array_equal(got.astype(np.int64), ref.astype(np.int64))
        return
    # fp16/bf16 products are exact in fp32; the error is fp32 accumulation (or the final rounding
    # to fp16 for out_dtype=fp16) on top of exactly-rounded inputs.
    tol = 2e-3 if out == "fp16" else 1e-5 * max(1.0, np.sqrt(K))
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol * 4)


# ---- one dot on one block ---------------------------------------------------------------------
@triton.jit
def dot_block(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              HAS_C: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if HAS_C:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, c)
    else:
        d = tl.dot(a, b)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d)


def run_dot_block(M, N, K, dtype, has_c, num_warps, path, monkeypatch, expect=None):
    monkeypatch.setenv(dot_mod.ENV, path)
    acc_t, acc_np = acc_info(dtype)
    sig = {"a_ptr": f"*{SIG[dtype]}", "b_ptr": f"*{SIG[dtype]}", "c_ptr": f"*{acc_t}", "d_ptr": f"*{acc_t}",
           "M": "constexpr", "N": "constexpr", "K": "constexpr", "HAS_C": "constexpr"}
    k = Kernel(dot_block, sig, {"M": M, "N": N, "K": K, "HAS_C": has_c}, num_warps)
    assert PATH_MARK[expect or expected_path(path, M, N, K, dtype)] in k.msl
    rng = np.random.default_rng()
    a, a64 = rand_input(rng, (M, K), dtype)
    b, b64 = rand_input(rng, (K, N), dtype)
    if dtype == "int8":
        c = rng.integers(-1000, 1000, size=(M, N), dtype=np.int32)
    else:
        c = rng.standard_normal((M, N)).astype(np.float32)
    d = poison((M, N), acc_np)
    k(a, b, c, d)
    ref = a64 @ b64 + (c.astype(np.float64) if has_c else 0.0)
    check(d, ref, dtype, K)
    return k


SHAPES = [(16, 16, 16), (32, 32, 32), (64, 32, 16), (16, 64, 32),
          (4, 16, 8), (16, 4, 2), (2, 8, 32), (1, 16, 16), (8, 8, 8)]


@pytest.mark.parametrize("path", ["fma", "simdgroup"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "int8"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dot_shapes(shape, dtype, path, monkeypatch):
    M, N, K = shape
    run_dot_block(M, N, K, dtype, True, 4, path, monkeypatch)


@pytest.mark.parametrize("path", ["fma", "simdgroup"])
@pytest.mark.parametrize("has_c", [False, True])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype,shape", [("fp16", (32, 32, 32)), ("bf16", (16, 64, 32)),
                                         ("fp32", (64, 32, 16)), ("int8", (16, 16, 32))])
def test_dot_warps(dtype, shape, num_warps, has_c, path, monkeypatch):
    run_dot_block(*shape, dtype, has_c, num_warps, path, monkeypatch)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "int8"])
def test_dot_operands_through_scratch(dtype, monkeypatch):
    """The FMA lowering's threadgroup-memory variant (used when the operand layouts do not put
    a result's operands in its own thread) computes the same result."""
    monkeypatch.setattr(dot_mod, "_register_plan", lambda *a: None)
    for shape, warps in (((32, 32, 16), 4), ((16, 8, 4), 2), ((16, 16, 32), 8)):
        run_dot_block(*shape, dtype, True, warps, "fma", monkeypatch, expect="scratch")


@triton.jit
def dot_block_f16_io(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # fp16 C and D in memory: the layout conversions around the dot then fit in 32 KiB too.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    d = tl.dot(a, b, c.to(tl.float32))
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d.to(tl.float16))


@pytest.mark.parametrize("runtime_guards", [False, True])
@pytest.mark.parametrize("shape,num_warps", [((128, 128, 32), 4), ((64, 64, 128), 8), ((128, 64, 64), 2),
                                             ((128, 128, 64), 8)])
def test_dot_simdgroup_chunked(shape, num_warps, runtime_guards, monkeypatch):
    """Tiles whose float staging exceeds 32 KiB: K staged in chunks, D read back in row bands.
    runtime_guards: take the branch used when a coordinate has a lane/warp part."""
    M, N, K = shape
    kc, rb = dot_mod._simdgroup_plan(M, N, K)
    assert (M + N) * kc * 4 <= 32768 and rb * N * 4 <= 32768 and (kc < K or rb < M)
    monkeypatch.setenv(dot_mod.ENV, "auto")
    if runtime_guards:
        monkeypatch.setattr(dot_mod, "_static_dim", lambda lay, d: False)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "d_ptr": "*fp16",
           "M": "constexpr", "N": "constexpr", "K": "constexpr"}
    k = Kernel(dot_block_f16_io, sig, {"M": M, "N": N, "K": K}, num_warps)
    assert PATH_MARK["simdgroup"] in k.msl
    assert f"K staged {kc} at a time, D read back {rb} rows" in k.msl
    assert k.cm.shared <= 32768
    rng = np.random.default_rng()
    a, a64 = rand_input(rng, (M, K), "fp16")
    b, b64 = rand_input(rng, (K, N), "fp16")
    c, c64 = rand_input(rng, (M, N), "fp16")
    d = poison((M, N), np.float16)
    k(a, b, c, d)
    check(d, a64 @ b64 + c64, "fp16", K, out="fp16")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_dot_simdgroup_stages_dot_operand_layouts(dtype, monkeypatch):
    """The simdgroup lowering normally stages A and B from before their conversion to the
    dot-operand layouts; staging the dot-operand registers themselves must agree."""
    monkeypatch.setattr(dot_mod, "_pre_conversion", lambda ctx, v: v)
    for shape, warps in (((32, 32, 16), 4), ((16, 64, 32), 2)):
        run_dot_block(*shape, dtype, True, warps, "simdgroup", monkeypatch)


@triton.jit
def dot_out_fp16(a_ptr, b_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    d = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d)


@pytest.mark.parametrize("path", ["fma", "simdgroup"])
def test_dot_out_dtype_fp16(path, monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, path)
    M, N, K = 32, 16, 32
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "d_ptr": "*fp16", "M": "constexpr", "N": "constexpr", "K": "constexpr"}
    k = Kernel(dot_out_fp16, sig, {"M": M, "N": N, "K": K}, 4)
    assert PATH_MARK[path] in k.msl
    assert "tt.dot 32x16x32 (f16 x f16 -> f16)" in k.msl
    rng = np.random.default_rng()
    a, a64 = rand_input(rng, (M, K), "fp16")
    b, b64 = rand_input(rng, (K, N), "fp16")
    d = poison((M, N), np.float16)
    k(a, b, d)
    check(d, a64 @ b64, "fp16", K, out="fp16")


@triton.jit
def dot_batched(a_ptr, b_ptr, d_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn[None, None, :])
    d = tl.dot(a, b)
    tl.store(d_ptr + rb * M * N + rm[None, :, None] * N + rn[None, None, :], d)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_dot_batched(num_warps, monkeypatch):
    """Rank-3 dots take the FMA lowering."""
    monkeypatch.setenv(dot_mod.ENV, "auto")
    Bt, M, N, K = 2, 16, 16, 8
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "d_ptr": "*fp32", "B": "constexpr", "M": "constexpr",
           "N": "constexpr", "K": "constexpr"}
    k = Kernel(dot_batched, sig, {"B": Bt, "M": M, "N": N, "K": K}, num_warps)
    rng = np.random.default_rng()
    a, a64 = rand_input(rng, (Bt, M, K), "fp32")
    b, b64 = rand_input(rng, (Bt, K, N), "fp32")
    d = poison((Bt, M, N), np.float32)
    k(a, b, d)
    check(d, a64 @ b64, "fp32", K)


# ---- compile-time pieces ----------------------------------------------------------------------
def test_register_plan_rejects_operands_in_other_threads():
    # C: 2x2 over 2 lanes along n; A places its k=1 column in the other lane: no register match.
    lc = Layout((2, 2), ((1, 0),), ((0, 1),), ())
    la_bad = Layout((2, 2), ((1, 0),), ((0, 1),), ())  # lane bit moves k, C's moves n
    lb = Layout((2, 2), ((1, 0),), ((0, 1),), ())
    assert dot_mod._register_plan(la_bad, lb, lc, 2) is None
    la_ok = Layout((2, 2), ((0, 1), (1, 0)), ((0, 0),), ())
    plan = dot_mod._register_plan(la_ok, lb, lc, 2)
    assert plan is not None and len(plan) == 2
    # C register 1 is row 1: A(1, k) lives in A register k*1 + 2 -> (2, 3) for k = 0, 1.
    assert [p[0] for p in plan[1]] == [2, 3]


def test_warp_grid():
    assert dot_mod._warp_grid(8, 8, 4) == (2, 2)
    assert dot_mod._warp_grid(2, 2, 8) == (2, 2)  # 4 tiles: 4 SIMD-groups in use
    assert dot_mod._warp_grid(3, 8, 4) == (1, 4)
    assert dot_mod._warp_grid(1, 1, 1) == (1, 1)


def test_bad_mode(monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, "tensorcore")
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "d_ptr": "*fp32",
           "M": "constexpr", "N": "constexpr", "K": "constexpr", "HAS_C": "constexpr"}
    with pytest.raises(Exception, match="TRITON_MPS_DOT"):
        Kernel(dot_block, sig, {"M": 16, "N": 16, "K": 16, "HAS_C": False}, 4)


# ---- tiled matmul with a K loop ---------------------------------------------------------------
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACC_INT: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped ordering: GROUP_M row-blocks share B columns while they are hot
    in_group = GROUP_M * num_pid_n
    group = pid // in_group
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    if ACC_INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def compile_matmul(dtype, bm, bn, bk, num_warps):
    acc_t, _ = acc_info(dtype)
    sig = {"a_ptr": f"*{SIG[dtype]}", "b_ptr": f"*{SIG[dtype]}", "c_ptr": f"*{acc_t}", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
           "stride_cm": "i32", "stride_cn": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
           "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "ACC_INT": "constexpr"}
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 2, "ACC_INT": dtype == "int8"}
    return Kernel(matmul_kernel, sig, consts, num_warps)


def to_torch64(x, dtype):
    if dtype == "bf16":
        return torch.from_numpy(bf16_to_f32(x)).to(torch.float64)
    return torch.from_numpy(x).to(torch.float64)


def run_matmul(k, dtype, M, N, K, bm, bn):
    rng = np.random.default_rng()
    a, _ = rand_input(rng, (M, K), dtype)
    bt, _ = rand_input(rng, (N, K), dtype)
    b = bt.T  # a column-major B: strides come from the array, not assumed
    _, acc_np = acc_info(dtype)
    c = poison((M, N), acc_np)
    es = a.itemsize
    grid = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    k(a, np.ascontiguousarray(bt), c, M, N, K, a.strides[0] // es, a.strides[1] // es,
      1, K, c.strides[0] // c.itemsize, c.strides[1] // c.itemsize, grid=grid)
    ref = torch.matmul(to_torch64(a, dtype), to_torch64(np.ascontiguousarray(b), dtype)).numpy()
    check(c, ref, dtype, K)


@pytest.mark.parametrize("path", ["fma", "simdgroup"])
@pytest.mark.parametrize("dtype,blocks,num_warps", [
    ("fp32", (32, 32, 16), 4), ("fp16", (64, 32, 32), 4), ("bf16", (32, 64, 16), 8),
    ("int8", (32, 32, 32), 2), ("fp16", (16, 16, 16), 1), ("fp32", (16, 32, 8), 2),
])
def test_matmul(dtype, blocks, num_warps, path, monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, path)
    bm, bn, bk = blocks
    k = compile_matmul(dtype, bm, bn, bk, num_warps)
    assert PATH_MARK[expected_path(path, bm, bn, bk, dtype)] in k.msl
    for M, N, K in ((bm * 3 + 5, bn * 2 + 3, bk * 3 + 7), (bm, bn, bk), (7, 5, 3)):
        run_matmul(k, dtype, M, N, K, bm, bn)


def test_matmul_64x64x32_fp16_size_and_compile_time(monkeypatch, capsys):
    """Reports the emitted MSL size and the simulator compile time (cache bypassed with a unique
    comment: the simulator caches by source) of a 64x64x32 fp16 matmul, for both lowerings."""
    lines = []
    for path in ("simdgroup", "fma"):
        monkeypatch.setenv(dot_mod.ENV, path)
        k = compile_matmul("fp16", 64, 64, 32, 4)
        run_matmul(k, "fp16", 150, 130, 100, 64, 64)
        t0 = time.perf_counter()
        triton_mps.compile_msl(k.msl + f"// {uuid.uuid4()}\n", k.cm.name, triton_mps.get_device("sim"))
        cold = time.perf_counter() - t0
        lines.append(f"64x64x32 fp16 matmul, {path}: MSL {len(k.msl)} bytes / {k.msl.count(chr(10))} lines, "
                     f"TTGIR->MSL {k.lower_seconds * 1e3:.1f} ms, simulator compile {cold:.2f} s (uncached), "
                     f"threadgroup memory {k.cm.shared} bytes")
        assert k.cm.shared <= 32 * 1024
    with capsys.disabled():
        print("\n" + "\n".join(lines))
