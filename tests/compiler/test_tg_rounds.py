"""Threadgroup memory within Metal's 32 KiB: exchanges that do not fit go through it in rounds.

Big tiles at the real limit (a 128x128x64 fp32 dot; with TMPS_SLOW_TESTS=1 also a transpose,
flip and cumsum of a 256x128 fp32 tile, ~2 min; the 128x128 fp32 transpose is in
tests/triton/language/test_limits.py), and every rounds path on small tensors with the limit lowered
(lowering.SCRATCH_LIMIT, read when used), so that layout conversions, join/cat, gather, reductions across warps, scans,
the generic reduce/scan paths and the FMA dot all run in several rounds cheaply. Values are
checked against numpy (float64) on fresh random inputs with poisoned outputs, and the emitted
threadgroup memory (CompiledMSL.shared) against the limit."""

from __future__ import annotations

import os

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps.compiler.ops.dot as dot_mod
import triton_mps.compiler.ops.reduce as reduce_mod
from tmps_testing import linrec_reference
from triton_mps.compiler import lowering
from ttgir_harness import compile_kernel, poison

LIMIT = 32 * 1024


def _rng():
    return np.random.default_rng()


@pytest.fixture
def small_limit(monkeypatch):
    """A 1 KiB threadgroup memory limit: a 32x16 fp32 tile needs 2 rounds. (Not lower: a scan
    across warps exchanges at least one value per thread at once, 128 threads x 2 floats here.)"""
    monkeypatch.setattr(lowering, "SCRATCH_LIMIT", 1024)
    return 1024


# ---- kernels ------------------------------------------------------------------------------------

@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def tile_ops(x_ptr, t_ptr, f_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    """Transpose, flip along dim 0 and cumsum along AXIS of one masked BM x BN tile."""
    r, c = tl.arange(0, BM)[:, None], tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * BN + c, mask=m, other=0.0)
    tl.store(t_ptr + c * BM + r, x, mask=m)  # untouched reference layout for the transpose below
    tl.store(t_ptr + tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :], tl.trans(x))
    tl.store(f_ptr + r * BN + c, tl.flip(x, 0))
    tl.store(c_ptr + r * BN + c, tl.cumsum(x, axis=AXIS))


def _tile_refs(x, axis):
    return x.T.copy(), x[::-1].copy(), np.cumsum(x.astype(np.float64), axis=axis)


def _run_tiles(BM, BN, axis, num_warps, M=None, N=None):
    M, N = M or BM, N or BN
    sig = {"x_ptr": "*fp32", "t_ptr": "*fp32", "f_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(tile_ops, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    x = np.zeros((BM, BN), np.float32)
    x[:M, :N] = _rng().standard_normal((M, N)).astype(np.float32)
    t, f, c = poison((BN, BM), np.float32), poison((BM, BN), np.float32), poison((BM, BN), np.float32)
    k(x, t, f, c, M, N)
    rt, rf, rc = _tile_refs(x, axis)
    np.testing.assert_array_equal(t, rt)
    np.testing.assert_array_equal(f, rf)
    np.testing.assert_allclose(c, rc, rtol=1e-5, atol=1e-4)
    return k


# ---- at the real limit ------------------------------------------------------------------------------

def test_dot_128x128x64_fp32():
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    k = compile_kernel(mm_kernel, sig, {"BM": 128, "BN": 128, "BK": 64}, 4)
    assert 0 < k.cm.shared <= LIMIT
    rng = _rng()
    M, N, K = 120, 127, 61
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = poison((M, N), np.float32)
    k(a, b, c, M, N, K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not os.environ.get("TMPS_SLOW_TESTS"), reason="~2 min on 2 cores: set TMPS_SLOW_TESTS=1")
def test_big_tile_transpose_flip_cumsum():
    # 256 x 128 fp32 = 128 KiB per tile: the transpose's layout conversion, the flip's reduction
    # across warps and the cumsum's exchange of segment totals all need rounds.
    k = _run_tiles(256, 128, 1, 8, M=250, N=100)
    assert 0 < k.cm.shared <= LIMIT
    assert "rounds of" in k.msl


# ---- every rounds path, limit lowered ---------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1])
def test_tiles_in_rounds(small_limit, axis):
    k = _run_tiles(32, 16, axis, 4, M=29, N=13)
    assert 0 < k.cm.shared <= small_limit
    assert "rounds of" in k.msl


@triton.jit
def join_cat_gather(x_ptr, y_ptr, i_ptr, j_ptr, c_ptr, g_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    x, y = tl.load(x_ptr + o), tl.load(y_ptr + o)
    j = tl.join(x, y)  # (B, 2)
    tl.store(j_ptr + o[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    tl.store(c_ptr + tl.arange(0, 2 * B), tl.cat(x, y, can_reorder=True))
    tl.store(g_ptr + o, tl.gather(x, tl.load(i_ptr + o), 0))


def test_join_cat_gather_in_rounds(small_limit):
    B = 256
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "i_ptr": "*i32", "j_ptr": "*fp32", "c_ptr": "*fp32",
           "g_ptr": "*fp32", "B": "constexpr"}
    k = compile_kernel(join_cat_gather, sig, {"B": B}, 4)
    assert 0 < k.cm.shared <= small_limit
    rng = _rng()
    x, y = rng.standard_normal(B).astype(np.float32), rng.standard_normal(B).astype(np.float32)
    idx = rng.integers(0, B, size=B).astype(np.int32)
    j, c, g = poison((B, 2), np.float32), poison(2 * B, np.float32), poison(B, np.float32)
    k(x, y, idx, j, c, g)
    np.testing.assert_array_equal(j, np.stack([x, y], axis=1))
    # can_reorder: the order of the elements is the compiler's; the multiset is not
    np.testing.assert_array_equal(np.sort(c), np.sort(np.concatenate([x, y])))
    np.testing.assert_array_equal(g, x[idx])


@triton.jit
def linrec_kernel(a_ptr, b_ptr, oa_ptr, ob_ptr, ma_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                  AXIS: tl.constexpr, REVERSE: tl.constexpr):
    r, c = tl.arange(0, BM)[:, None], tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    a = tl.load(a_ptr + r * N + c, mask=m, other=1.0)
    b = tl.load(b_ptr + r * N + c, mask=m, other=0.0)
    oa, ob = tl.associative_scan((a, b), AXIS, _linrec, reverse=REVERSE)  # not commutative
    tl.store(oa_ptr + r * N + c, oa, mask=m)
    tl.store(ob_ptr + r * N + c, ob, mask=m)
    if AXIS == 0:
        tl.store(ma_ptr + tl.arange(0, BN), tl.argmax(tl.where(m, b, -1e30), 0), mask=tl.arange(0, BN) < N)
    else:
        tl.store(ma_ptr + tl.arange(0, BM), tl.argmax(tl.where(m, b, -1e30), 1), mask=tl.arange(0, BM) < M)


@triton.jit
def _linrec(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True)])
def test_scan_and_argmax_in_rounds(small_limit, monkeypatch, axis, reverse, generic):
    if generic:  # the generic paths (layouts whose bases mix dims), forced on ordinary layouts
        monkeypatch.setattr(reduce_mod, "_reduce_plan", lambda lay, axis: None)
        monkeypatch.setattr(reduce_mod, "_scan_plan", lambda lay, axis: None)
    BM, BN, M, N = 32, 16, 29, 15
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "oa_ptr": "*fp32", "ob_ptr": "*fp32", "ma_ptr": "*i32",
           "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr", "REVERSE": "constexpr"}
    k = compile_kernel(linrec_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis, "REVERSE": reverse}, 4)
    assert 0 < k.cm.shared <= small_limit
    assert ("generic path" in k.msl) == generic
    # (along axis 1 the fast paths stay inside SIMD-groups: no threadgroup memory to split)
    assert ("rounds of" in k.msl) == (generic or axis == 0)
    rng = _rng()
    a = rng.uniform(0.5, 1.0, size=(M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    oa, ob = poison((M, N), np.float32), poison((M, N), np.float32)
    ma = poison(N if axis == 0 else M, np.int32)
    k(a, b, oa, ob, ma, M, N)
    ra, rb = linrec_reference(a, b, axis, reverse)
    np.testing.assert_allclose(oa, ra, rtol=1e-4, atol=1e-30)
    np.testing.assert_allclose(ob, rb, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(ma, b.argmax(axis))


@pytest.mark.parametrize("dtype", ["int8", "fp32"])
def test_fma_dot_k_chunks(small_limit, monkeypatch, dtype):
    monkeypatch.setenv("TRITON_MPS_DOT", "fma")
    monkeypatch.setattr(dot_mod, "MAX_UNROLLED_FMAS", 0)  # operands through threadgroup memory
    sig = {"a_ptr": f"*{'i8' if dtype == 'int8' else 'fp32'}", "b_ptr": f"*{'i8' if dtype == 'int8' else 'fp32'}",
           "c_ptr": f"*{'i32' if dtype == 'int8' else 'fp32'}", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    k = compile_kernel(mm_kernel, sig, {"BM": 16, "BN": 16, "BK": 32}, 2)
    assert 0 < k.cm.shared <= small_limit
    assert "K staged" in k.msl
    rng = _rng()
    M, N, K = 15, 13, 30
    if dtype == "int8":
        a = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
        b = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
        c = poison((M, N), np.int32)
        k(a, b, c, M, N, K)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    else:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        c = poison((M, N), np.float32)
        k(a, b, c, M, N, K)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
