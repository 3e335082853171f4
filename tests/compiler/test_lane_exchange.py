"""Batched lane exchanges (compiler/lane_exchange.py): reductions and scans move the values of
several registers / operands in one vector simd_shuffle_xor per butterfly round.

Each kernel is built twice, batched and with one call per value (lane_exchange.BATCHED = False,
the path before batching), and both run on the same fresh random inputs: the outputs must agree
bit for bit (only bits move between lanes, the combines run in the same order), and match a
numpy reference. Shapes are not multiples of the blocks (masked loads); dtypes cover every way a
value is packed into 32-bit words (a word, two words, half a word)."""

import re

import numpy as np
import pytest
import triton
import triton.language as tl
from triton_mps.compiler import lane_exchange
from ttgir_harness import bf16_to_f32, compile_kernel, f32_to_bf16, poison

SHUFFLE = re.compile(r"\bsimd_shuffle_xor\(")

# (triton signature type, numpy dtype of the buffer)
DTYPES = {
    "fp32": ("*fp32", np.float32),
    "fp16": ("*fp16", np.float16),
    "bf16": ("*bf16", np.uint16),  # bfloat bits
    "i8": ("*i8", np.int8),
    "i16": ("*i16", np.int16),
    "i32": ("*i32", np.int32),
    "i64": ("*i64", np.int64),
    "u8": ("*u8", np.uint8),
}


def _inputs(rng, dtype: str, shape) -> np.ndarray:
    if dtype == "bf16":
        return f32_to_bf16(rng.standard_normal(shape).astype(np.float32))
    np_t = DTYPES[dtype][1]
    if np.issubdtype(np_t, np.floating):
        return rng.standard_normal(shape).astype(np_t)
    info = np.iinfo(np_t)
    return rng.integers(info.min, info.max, size=shape, dtype=np_t, endpoint=True)


def _values(dtype: str, x: np.ndarray) -> np.ndarray:
    """x as numbers numpy can compare (bfloat bits widened to float32)."""
    return bf16_to_f32(x) if dtype == "bf16" else x


def _both(fn, sig, constexprs, num_warps, monkeypatch):
    """(batched, one call per value) builds of the same kernel."""
    batched = compile_kernel(fn, sig, constexprs, num_warps)
    monkeypatch.setattr(lane_exchange, "BATCHED", False)
    scalar = compile_kernel(fn, sig, constexprs, num_warps)
    monkeypatch.setattr(lane_exchange, "BATCHED", True)
    return batched, scalar


def _same_bits(a: np.ndarray, b: np.ndarray):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


# ---------------------------------------------------------------------------------------------
# reductions: max (keeps the dtype), argmax (value + int32 index: two operands), sum (fp order)


@triton.jit
def max_arg_kernel(x_ptr, mx_ptr, am_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    first = tl.load(x_ptr + r * N, mask=r < M, other=0)
    x = tl.where(m, tl.load(x_ptr + r * N + c, mask=m, other=0), first)  # padded with the row's first value
    ro = tl.arange(0, BM)
    tl.store(mx_ptr + ro, tl.max(x, axis=1), mask=ro < M)
    tl.store(am_ptr + ro, tl.argmax(x, axis=1, tie_break_left=True), mask=ro < M)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape,num_warps", [((64, 32, 61, 29), 4), ((16, 64, 13, 50), 2), ((8, 128, 8, 100), 1)])
def test_reduce_batched_same_bits(dtype, shape, num_warps, monkeypatch):
    BM, BN, M, N = shape
    ptr, np_t = DTYPES[dtype]
    sig = {"x_ptr": ptr, "mx_ptr": ptr, "am_ptr": "*i32", "M": "i32", "N": "i32", "BM": "constexpr",
           "BN": "constexpr"}
    batched, scalar = _both(max_arg_kernel, sig, {"BM": BM, "BN": BN}, num_warps, monkeypatch)
    # Several rows per thread (and two operands for argmax): the batched build exchanges
    # vectors, in fewer calls than the one-call-per-value build.
    assert re.search(r"\buint[234] \w+ = simd_shuffle_xor\(uint[234]\(", batched.msl)
    assert not re.search(r"simd_shuffle_xor\(uint[234]\(", scalar.msl)  # (uint4 also packs scratch runs)
    assert len(SHUFFLE.findall(batched.msl)) < len(SHUFFLE.findall(scalar.msl))
    rng = np.random.default_rng()
    x = _inputs(rng, dtype, (M, N))
    outs = {}
    for name, k in (("batched", batched), ("scalar", scalar)):
        mx, am = poison(M, np_t), poison(M, np.int32)
        k(x, mx, am, M, N)
        outs[name] = (mx, am)
    for a, b in zip(outs["batched"], outs["scalar"], strict=True):
        _same_bits(a, b)
    v = _values(dtype, x)
    mx, am = outs["batched"]
    np.testing.assert_array_equal(_values(dtype, mx), v.max(axis=1))
    np.testing.assert_array_equal(am, v.argmax(axis=1))


@triton.jit
def sum_rows_kernel(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + r * N + c, mask=(r < M) & (c < N), other=0.0)
    ro = tl.arange(0, BM)
    tl.store(o_ptr + ro, tl.sum(x, axis=1), mask=ro < M)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_float_sum_batched_same_bits(num_warps, monkeypatch):
    """fp32 sums: every add is rounded, so a changed combine order would show in the bits."""
    BM, BN, M, N = 64, 64, 57, 63
    sig = {"x_ptr": "*fp32", "o_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}
    batched, scalar = _both(sum_rows_kernel, sig, {"BM": BM, "BN": BN}, num_warps, monkeypatch)
    assert "uint4(" in batched.msl
    x = (np.random.default_rng().standard_normal((M, N)) * 1e3).astype(np.float32)
    a, b = poison(M, np.float32), poison(M, np.float32)
    batched(x, a, M, N)
    scalar(x, b, M, N)
    _same_bits(a, b)
    np.testing.assert_allclose(a, x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# scans: cumsum (the benchmark's 1-D shape: 8 registers strided over the axis), 2-D rows, and a
# two-operand associative scan


@triton.jit
def cumsum_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0)
    tl.store(o_ptr + tl.program_id(0) * n + offs, tl.cumsum(x, axis=0), mask=offs < n)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i32", "i64"])
def test_cumsum_batched_same_bits(dtype, monkeypatch):
    ptr, np_t = DTYPES[dtype]
    BLOCK, n, rows = 1024, 1000, 3
    sig = {"x_ptr": ptr, "o_ptr": ptr, "n": "i32", "BLOCK": "constexpr"}
    batched, scalar = _both(cumsum_kernel, sig, {"BLOCK": BLOCK}, 4, monkeypatch)
    if dtype in ("fp32", "i32", "fp16"):  # 8 one-word values per round (fp16 carries float): 2 calls
        assert len(SHUFFLE.findall(batched.msl)) == 5 * 2
        assert len(SHUFFLE.findall(scalar.msl)) == 5 * 8
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, n)).astype(np_t) if dtype.startswith("fp") else \
        rng.integers(-1000, 1000, size=(rows, n)).astype(np_t)
    a, b = poison((rows, n), np_t), poison((rows, n), np_t)
    batched(x, a, n, grid=rows)
    scalar(x, b, n, grid=rows)
    _same_bits(a, b)
    if dtype.startswith("fp"):
        np.testing.assert_allclose(a.astype(np.float64), np.cumsum(x.astype(np.float64), 1),
                                   rtol=1e-2 if dtype == "fp16" else 1e-4, atol=0.5 if dtype == "fp16" else 1e-3)
    else:
        np.testing.assert_array_equal(a, np.cumsum(x, 1).astype(np_t))


@triton.jit
def _pair_combine(a, ai, b, bi):
    # (running max, position of the running max): associative, not commutative
    take = b >= a
    return tl.where(take, b, a), tl.where(take, bi, ai)


@triton.jit
def scan_pair_kernel(x_ptr, v_ptr, i_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0)
    idx = (c + r * 0).to(tl.int16)
    v, i = tl.associative_scan((x, idx), 1, _pair_combine)
    tl.store(v_ptr + r * N + c, v, mask=m)
    tl.store(i_ptr + r * N + c, i, mask=m)


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "i8", "i64"])
def test_two_operand_scan_batched_same_bits(dtype, monkeypatch):
    ptr, np_t = DTYPES[dtype]
    BM, BN, M, N = 16, 64, 11, 60
    sig = {"x_ptr": ptr, "v_ptr": ptr, "i_ptr": "*i16", "M": "i32", "N": "i32", "BM": "constexpr",
           "BN": "constexpr"}
    batched, scalar = _both(scan_pair_kernel, sig, {"BM": BM, "BN": BN}, 4, monkeypatch)
    assert len(SHUFFLE.findall(batched.msl)) < len(SHUFFLE.findall(scalar.msl))
    x = _inputs(np.random.default_rng(), dtype, (M, N))
    outs = {}
    for name, k in (("batched", batched), ("scalar", scalar)):
        v, i = poison((M, N), np_t), poison((M, N), np.int16)
        k(x, v, i, M, N)
        outs[name] = (v, i)
    for a, b in zip(outs["batched"], outs["scalar"], strict=True):
        _same_bits(a, b)
    xv = _values(dtype, x)
    ref_v = np.maximum.accumulate(xv, axis=1)
    ref_i = np.empty((M, N), np.int16)
    for row in range(M):
        best = 0
        for col in range(N):
            if xv[row, col] >= xv[row, best]:
                best = col
            ref_i[row, col] = best
    np.testing.assert_array_equal(_values(dtype, outs["batched"][0]), ref_v)
    np.testing.assert_array_equal(outs["batched"][1], ref_i)
