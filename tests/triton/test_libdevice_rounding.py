"""libdevice's rounding-mode functions (compiler/mslib/rounding.py): add/sub/mul/div/fma/sqrt/rcp_rz/rd/ru
on fp32 and fp64, double2float_*, double2{int,uint,ll,ull}_*, {int,uint,ll,ull}2float_*,
{int,uint,ll,ull}2double_*, the fp64 bit moves (double_as_longlong, longlong_as_double,
hiloint2double, double2hiint, double2loint) and byte_perm, mul24, sad.

Every result must equal, bit for bit, the exact value (fractions.Fraction, an integer square
root for sqrt) rounded in the function's mode by the small reference below (NaNs compare as NaN,
payloads are not compared). Inputs: random bit patterns (every exponent, subnormals, NaN, inf),
values near the overflow / underflow thresholds, cancelling and a few binades apart pairs, exact
quotients and squares, halfway cases, integer saturation bounds. A few kernels compute every
function (one compile each), on sizes that are not a multiple of the block, outputs poisoned."""

from __future__ import annotations

import math
import struct
import warnings
from fractions import Fraction

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from fp64_ref import partners, samples
from triton.language.extra import libdevice

N = 3001  # inputs per function (not a multiple of BLOCK)
BLOCK = 128
MODES = ("rz", "rd", "ru")
ARITH = ["add", "sub", "mul", "div", "fma", "sqrt", "rcp"]
ARITH_NAMES = [f"{op}_{m}" for op in ARITH for m in MODES]
FMT = {"f32": (24, -126, 127), "f64": (53, -1022, 1023)}  # precision, emin, emax

# ---- exact reference rounding ------------------------------------------------------------------


def _ilog2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > v else e


class Sqrt:
    """sqrt(a) of a positive Fraction, for `round_to`."""

    def __init__(self, a: Fraction):
        self.a = a


def _scaled(v, qe: int) -> tuple[int, bool, int]:
    """(floor(v / 2^qe), exact?, sign of the remainder - 1/2)."""
    if isinstance(v, Sqrt):
        y = v.a / Fraction(2) ** (2 * qe)
        n = math.isqrt(math.floor(y))  # floor(sqrt(y)) == isqrt(floor(y))
        h = (Fraction(2 * n + 1, 2)) ** 2
        return n, n * n == y, (y > h) - (y < h)
    y = v / Fraction(2) ** qe
    n = math.floor(y)
    r = y - n
    return n, r == 0, (r > Fraction(1, 2)) - (r < Fraction(1, 2))


def _encode(neg: bool, n: int, qe: int, fmt: str) -> int:
    p, emin, _ = FMT[fmt]
    width = 32 if fmt == "f32" else 64
    bias = -emin + 1
    s = (1 << (width - 1)) if neg else 0
    if n < (1 << (p - 1)):  # subnormal or zero
        assert n == 0 or qe == emin - p + 1
        return s | n
    return s | ((qe + p - 1 + bias) << (p - 1)) | (n - (1 << (p - 1)))


def _overflow(neg: bool, mode: str, fmt: str) -> int:
    p, emin, emax = FMT[fmt]
    width = 32 if fmt == "f32" else 64
    inf = mode == "rn" or (mode == "rd" and neg) or (mode == "ru" and not neg)
    ebits = width - p
    mag = ((1 << ebits) - 1) << (p - 1) if inf else (((1 << ebits) - 1) << (p - 1)) - 1
    return ((1 << (width - 1)) if neg else 0) | mag


def round_to(neg: bool, v, mode: str, fmt: str) -> int:
    """Bits of the nonzero value (-1)^neg * v (a positive Fraction or Sqrt) rounded in `mode`."""
    p, emin, emax = FMT[fmt]
    e = _ilog2(v.a) // 2 if isinstance(v, Sqrt) else _ilog2(v)
    qe = max(e, emin) - (p - 1)
    n, exact, half = _scaled(v, qe)
    if mode == "rn":
        up = half > 0 or (half == 0 and n % 2 == 1)
    elif mode == "rz":
        up = False
    else:
        up = not exact and (mode == "rd") == neg
    n += up
    if n == 1 << p:
        n, qe = n >> 1, qe + 1
    if qe + p - 1 > emax:
        return _overflow(neg, mode, fmt)
    return _encode(neg, n, qe, fmt)


def round_frac(q: Fraction, mode: str, fmt: str, zero_neg: bool = False) -> int:
    if q == 0:
        return (1 << (31 if fmt == "f32" else 63)) if zero_neg else 0
    return round_to(q < 0, abs(q), mode, fmt)


def bits_of(x: float, fmt: str) -> int:
    if fmt == "f32":
        return struct.unpack("<I", struct.pack("<f", x))[0]
    return struct.unpack("<Q", struct.pack("<d", x))[0]


NAN = "nan"


def _special(x: float, fmt: str):
    return NAN if math.isnan(x) else bits_of(x, fmt)


def ref_add(x: float, y: float, mode: str, fmt: str):
    if math.isnan(x) or math.isnan(y):
        return NAN
    if math.isinf(x) or math.isinf(y):
        if math.isinf(x) and math.isinf(y) and (x > 0) != (y > 0):
            return NAN
        return bits_of(x if math.isinf(x) else y, fmt)
    q = Fraction(x) + Fraction(y)
    if q == 0:
        nx, ny = math.copysign(1, x) < 0, math.copysign(1, y) < 0
        if x == 0 and y == 0 and nx == ny:
            return round_frac(q, mode, fmt, nx)
        return round_frac(q, mode, fmt, mode == "rd")
    return round_frac(q, mode, fmt)


def ref_mul(x: float, y: float, mode: str, fmt: str):
    if math.isnan(x) or math.isnan(y):
        return NAN
    neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    if math.isinf(x) or math.isinf(y):
        return NAN if x == 0 or y == 0 else bits_of(-math.inf if neg else math.inf, fmt)
    return round_frac(Fraction(x) * Fraction(y), mode, fmt, neg)


def ref_div(x: float, y: float, mode: str, fmt: str):
    if math.isnan(x) or math.isnan(y):
        return NAN
    neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    inf, zero = bits_of(-math.inf if neg else math.inf, fmt), bits_of(-0.0 if neg else 0.0, fmt)
    if math.isinf(x):
        return NAN if math.isinf(y) else inf
    if math.isinf(y):
        return zero
    if y == 0:
        return NAN if x == 0 else inf
    return round_frac(Fraction(x) / Fraction(y), mode, fmt, neg)


def ref_sqrt(x: float, mode: str, fmt: str):
    if math.isnan(x) or (x < 0):
        return NAN
    if x == 0 or math.isinf(x):
        return bits_of(x, fmt)
    return round_to(False, Sqrt(Fraction(x)), mode, fmt)


def ref_fma(a: float, b: float, c: float, mode: str, fmt: str):
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return NAN
    neg = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0 or (math.isinf(c) and (c < 0) != neg):
            return NAN
        return bits_of(-math.inf if neg else math.inf, fmt)
    if math.isinf(c):
        return bits_of(c, fmt)
    if a == 0 or b == 0:
        return ref_add(-0.0 if neg else 0.0, c, mode, fmt)
    q = Fraction(a) * Fraction(b) + Fraction(c)
    return round_frac(q, mode, fmt, mode == "rd")


def reference(name: str, fmt: str, x: float, y: float, z: float):
    op, mode = name.split("_")
    if op == "add":
        return ref_add(x, y, mode, fmt)
    if op == "sub":
        return ref_add(x, -y, mode, fmt)
    if op == "mul":
        return ref_mul(x, y, mode, fmt)
    if op == "div":
        return ref_div(x, y, mode, fmt)
    if op == "rcp":
        return ref_div(1.0, x, mode, fmt)
    if op == "sqrt":
        return ref_sqrt(x, mode, fmt)
    return ref_fma(x, y, z, mode, fmt)


def check_bits(name: str, got_bits: np.ndarray, want: list, inputs) -> None:
    """got_bits: unsigned ints; want: ints or NAN; NaN results are recognized from the bits."""
    width = got_bits.dtype.itemsize * 8
    exp_mask = ((1 << (width - 1)) - 1) & ~((1 << (23 if width == 32 else 52)) - 1)
    frac_mask = (1 << (23 if width == 32 else 52)) - 1
    bad = []
    for j, (g, w) in enumerate(zip(got_bits.tolist(), want, strict=True)):
        g_nan = (g & exp_mask) == exp_mask and (g & frac_mask) != 0
        ok = g_nan if w is NAN else g == w
        if not ok:
            bad.append((j, [inp[j] for inp in inputs], hex(g), w if w is NAN else hex(w)))
    assert not bad, f"{name}: {len(bad)} wrong, first: {bad[:3]}"


# ---- inputs --------------------------------------------------------------------------------------


def f32_samples(rng, n: int) -> np.ndarray:
    """n float32 values of every kind (as float32)."""
    k = n // 6
    bits = rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)
    nice = ((rng.random(k) + 1) * np.exp2(rng.integers(-30, 30, k)) * rng.choice([-1, 1], k)).astype(np.float32)
    sub = (rng.integers(1, 2**23, k) * 2.0 ** -149 * rng.choice([-1, 1], k)).astype(np.float32)
    edge = ((rng.random(k) + 1) * np.exp2(rng.choice([-127, -126, -125, 126, 127], k)) *
            rng.choice([-1, 1], k)).astype(np.float32)
    ints = (rng.integers(-64, 64, k) / rng.choice([1.0, 2.0, 4.0], k)).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1.5, 3.0, 2.0 ** -149, -2.0 ** -149,
                        2.0 ** -126, 3.4028235e38, -3.4028235e38, 2.0 ** 24 + 2, 0.1], dtype=np.float32)
    out = np.concatenate([bits, nice, sub, edge, ints])
    out = np.concatenate([out, rng.choice(special, n - out.size)])
    return rng.permutation(out).astype(np.float32)


def f32_partners(rng, x: np.ndarray) -> np.ndarray:
    n = x.size
    y = f32_samples(rng, n)
    pick = rng.integers(0, 6, n)
    with np.errstate(all="ignore"):
        near = x.astype(np.float64) * (1 + rng.choice([-1, 1], n) * np.exp2(-rng.integers(1, 30, n)))
        near = near.astype(np.float32)
        shifted = (x.astype(np.float64) * np.exp2(rng.integers(-30, 30, n)) * (1 + rng.random(n))).astype(np.float32)
        halfway = (x.astype(np.float64) * np.exp2(-rng.integers(23, 27, n))).astype(np.float32)  # ties, near-ties
    y = np.where(pick == 1, near, y)
    y = np.where(pick == 2, -x, y)
    y = np.where(pick == 3, shifted, y)
    y = np.where(pick == 4, halfway, y)
    return y.astype(np.float32)


def arith_inputs(rng, fmt: str, n: int):
    """x, y, z for the arithmetic kernel: y a partner of x (cancellation, alignment, ties); for a
    quarter of the elements x = y * small integer (exact quotients) or x = s * s (exact squares);
    z cancels x * y in part of the elements (fma)."""
    if fmt == "f32":
        x = f32_samples(rng, n)
        y = f32_partners(rng, x)
        z = f32_partners(rng, x)
        dt = np.float32
    else:
        x = samples(rng, n)
        y = partners(rng, x)
        z = partners(rng, x)
        dt = np.float64
    pick = rng.integers(0, 8, n)
    with np.errstate(all="ignore"):
        mult = (y * rng.integers(1, 9, n).astype(dt)).astype(dt)
        s = (rng.integers(1, 4096, n) * np.exp2(rng.integers(-80, 60, n))).astype(dt)
        sq = (s * s).astype(dt)
        prod = (x * y).astype(dt)
        x = np.where(pick == 0, mult, x)
        x = np.where(pick == 1, sq, x)
        z = np.where(pick == 2, -prod, z)
        z = np.where(pick == 3, (prod * np.exp2(-rng.integers(20, 60, n))).astype(dt), z)
    return x.astype(dt), y.astype(dt), z.astype(dt)


# ---- kernels -------------------------------------------------------------------------------------


@triton.jit
def _arith(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.add_rz(x, y), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.add_rd(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.add_ru(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.sub_rz(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.sub_rd(x, y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.sub_ru(x, y), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.mul_rz(x, y), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.mul_rd(x, y), mask=m)
    tl.store(out_ptr + 8 * n + offs, libdevice.mul_ru(x, y), mask=m)
    tl.store(out_ptr + 9 * n + offs, libdevice.div_rz(x, y), mask=m)
    tl.store(out_ptr + 10 * n + offs, libdevice.div_rd(x, y), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.div_ru(x, y), mask=m)
    tl.store(out_ptr + 12 * n + offs, libdevice.fma_rz(x, y, z), mask=m)
    tl.store(out_ptr + 13 * n + offs, libdevice.fma_rd(x, y, z), mask=m)
    tl.store(out_ptr + 14 * n + offs, libdevice.fma_ru(x, y, z), mask=m)
    tl.store(out_ptr + 15 * n + offs, libdevice.sqrt_rz(x), mask=m)
    tl.store(out_ptr + 16 * n + offs, libdevice.sqrt_rd(x), mask=m)
    tl.store(out_ptr + 17 * n + offs, libdevice.sqrt_ru(x), mask=m)
    tl.store(out_ptr + 18 * n + offs, libdevice.rcp_rz(x), mask=m)
    tl.store(out_ptr + 19 * n + offs, libdevice.rcp_rd(x), mask=m)
    tl.store(out_ptr + 20 * n + offs, libdevice.rcp_ru(x), mask=m)


D2F = [f"double2float_{m}" for m in ("rn", "rz", "rd", "ru")]
D2I32 = [f"double2{s}_{m}" for s in ("int", "uint") for m in ("rn", "rz", "rd", "ru")] + ["double2hiint",
                                                                                           "double2loint"]
D2I64 = [f"double2{s}_{m}" for s in ("ll", "ull") for m in ("rn", "rz", "rd", "ru")] + ["double_as_longlong"]


@triton.jit
def _from_f64(d_ptr, f32_ptr, i32_ptr, i64_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(d_ptr + offs, mask=m)
    tl.store(f32_ptr + 0 * n + offs, libdevice.double2float_rn(d), mask=m)
    tl.store(f32_ptr + 1 * n + offs, libdevice.double2float_rz(d), mask=m)
    tl.store(f32_ptr + 2 * n + offs, libdevice.double2float_rd(d), mask=m)
    tl.store(f32_ptr + 3 * n + offs, libdevice.double2float_ru(d), mask=m)
    tl.store(i32_ptr + 0 * n + offs, libdevice.double2int_rn(d), mask=m)
    tl.store(i32_ptr + 1 * n + offs, libdevice.double2int_rz(d), mask=m)
    tl.store(i32_ptr + 2 * n + offs, libdevice.double2int_rd(d), mask=m)
    tl.store(i32_ptr + 3 * n + offs, libdevice.double2int_ru(d), mask=m)
    tl.store(i32_ptr + 4 * n + offs, libdevice.double2uint_rn(d).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 5 * n + offs, libdevice.double2uint_rz(d).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 6 * n + offs, libdevice.double2uint_rd(d).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 7 * n + offs, libdevice.double2uint_ru(d).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 8 * n + offs, libdevice.double2hiint(d), mask=m)
    tl.store(i32_ptr + 9 * n + offs, libdevice.double2loint(d), mask=m)
    tl.store(i64_ptr + 0 * n + offs, libdevice.double2ll_rn(d), mask=m)
    tl.store(i64_ptr + 1 * n + offs, libdevice.double2ll_rz(d), mask=m)
    tl.store(i64_ptr + 2 * n + offs, libdevice.double2ll_rd(d), mask=m)
    tl.store(i64_ptr + 3 * n + offs, libdevice.double2ll_ru(d), mask=m)
    tl.store(i64_ptr + 4 * n + offs, libdevice.double2ull_rn(d).to(tl.int64, bitcast=True), mask=m)
    tl.store(i64_ptr + 5 * n + offs, libdevice.double2ull_rz(d).to(tl.int64, bitcast=True), mask=m)
    tl.store(i64_ptr + 6 * n + offs, libdevice.double2ull_rd(d).to(tl.int64, bitcast=True), mask=m)
    tl.store(i64_ptr + 7 * n + offs, libdevice.double2ull_ru(d).to(tl.int64, bitcast=True), mask=m)
    tl.store(i64_ptr + 8 * n + offs, libdevice.double_as_longlong(d), mask=m)


TO_F64 = ["int2double_rn", "uint2double_rn"] + [f"{s}2double_{m}" for s in ("ll", "ull")
                                                for m in ("rn", "rz", "rd", "ru")] + ["hiloint2double",
                                                                                      "longlong_as_double"]
TO_F32 = [f"{s}2float_{m}" for s in ("int", "uint", "ll", "ull") for m in MODES]
INT_FNS = ["byte_perm", "byte_perm_u", "mul24", "umul24", "sad", "usad"]


@triton.jit
def _from_int(a_ptr, b_ptr, c_ptr, l_ptr, f64_ptr, f32_ptr, i32_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    ll = tl.load(l_ptr + offs, mask=m)
    au = a.to(tl.uint32, bitcast=True)
    bu = b.to(tl.uint32, bitcast=True)
    cu = c.to(tl.uint32, bitcast=True)
    lu = ll.to(tl.uint64, bitcast=True)
    tl.store(f64_ptr + 0 * n + offs, libdevice.int2double_rn(a), mask=m)
    tl.store(f64_ptr + 1 * n + offs, libdevice.uint2double_rn(au), mask=m)
    tl.store(f64_ptr + 2 * n + offs, libdevice.ll2double_rn(ll), mask=m)
    tl.store(f64_ptr + 3 * n + offs, libdevice.ll2double_rz(ll), mask=m)
    tl.store(f64_ptr + 4 * n + offs, libdevice.ll2double_rd(ll), mask=m)
    tl.store(f64_ptr + 5 * n + offs, libdevice.ll2double_ru(ll), mask=m)
    tl.store(f64_ptr + 6 * n + offs, libdevice.ull2double_rn(lu), mask=m)
    tl.store(f64_ptr + 7 * n + offs, libdevice.ull2double_rz(lu), mask=m)
    tl.store(f64_ptr + 8 * n + offs, libdevice.ull2double_rd(lu), mask=m)
    tl.store(f64_ptr + 9 * n + offs, libdevice.ull2double_ru(lu), mask=m)
    tl.store(f64_ptr + 10 * n + offs, libdevice.hiloint2double(a, b), mask=m)
    tl.store(f64_ptr + 11 * n + offs, libdevice.longlong_as_double(ll), mask=m)
    tl.store(f32_ptr + 0 * n + offs, libdevice.int2float_rz(a), mask=m)
    tl.store(f32_ptr + 1 * n + offs, libdevice.int2float_rd(a), mask=m)
    tl.store(f32_ptr + 2 * n + offs, libdevice.int2float_ru(a), mask=m)
    tl.store(f32_ptr + 3 * n + offs, libdevice.uint2float_rz(au), mask=m)
    tl.store(f32_ptr + 4 * n + offs, libdevice.uint2float_rd(au), mask=m)
    tl.store(f32_ptr + 5 * n + offs, libdevice.uint2float_ru(au), mask=m)
    tl.store(f32_ptr + 6 * n + offs, libdevice.ll2float_rz(ll), mask=m)
    tl.store(f32_ptr + 7 * n + offs, libdevice.ll2float_rd(ll), mask=m)
    tl.store(f32_ptr + 8 * n + offs, libdevice.ll2float_ru(ll), mask=m)
    tl.store(f32_ptr + 9 * n + offs, libdevice.ull2float_rz(lu), mask=m)
    tl.store(f32_ptr + 10 * n + offs, libdevice.ull2float_rd(lu), mask=m)
    tl.store(f32_ptr + 11 * n + offs, libdevice.ull2float_ru(lu), mask=m)
    tl.store(i32_ptr + 0 * n + offs, libdevice.byte_perm(a, b, c), mask=m)
    tl.store(i32_ptr + 1 * n + offs, libdevice.byte_perm(au, bu, cu).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 2 * n + offs, libdevice.mul24(a, b), mask=m)
    tl.store(i32_ptr + 3 * n + offs, libdevice.mul24(au, bu).to(tl.int32, bitcast=True), mask=m)
    tl.store(i32_ptr + 4 * n + offs, libdevice.sad(a, b, cu), mask=m)
    tl.store(i32_ptr + 5 * n + offs, libdevice.sad(au, bu, cu).to(tl.int32, bitcast=True), mask=m)


def _launch(kernel, args, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fp64 is emulated
        return kernel[(triton.cdiv(n, BLOCK),)](*args, n, BLOCK=BLOCK)


def _poison(dev, count: int, dtype) -> torch.Tensor:
    return torch.full((count,), -1, dtype=dtype, device=dev)  # all-ones bits: a NaN for floats


# ---- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_directed_arithmetic(mps_driver, fmt):
    dev = mps_driver.get_active_torch_device()
    rng = np.random.default_rng(41 if fmt == "f32" else 43)
    x, y, z = arith_inputs(rng, fmt, N)
    tdt, idt, udt = (torch.float32, torch.int32, np.uint32) if fmt == "f32" else (torch.float64, torch.int64, np.uint64)
    out = _poison(dev, len(ARITH_NAMES) * N, idt).view(tdt)
    compiled = _launch(_arith, [torch.from_numpy(v).to(dev) for v in (x, y, z)] + [out], N)
    msl = compiled.asm["msl"]
    msl = msl.decode() if isinstance(msl, bytes) else msl
    # fp32 needs no software float64 (whose helpers bring the "float64 is emulated" warning)
    assert ("tmps_f64" in msl) == (fmt == "f64")
    got = out.cpu().view(idt).numpy().view(udt).reshape(len(ARITH_NAMES), N)
    with np.errstate(invalid="ignore"):  # signaling NaNs
        xs, ys, zs = (v.astype(np.float64).tolist() for v in (x, y, z))
    for i, name in enumerate(ARITH_NAMES):
        want = [reference(name, fmt, a, b, c) for a, b, c in zip(xs, ys, zs, strict=True)]
        check_bits(f"{name} ({fmt})", got[i], want, (xs, ys, zs))


def _f64_conversion_inputs(rng, n: int) -> np.ndarray:
    """Every kind of double, integers and halves around the int32/int64/uint bounds, float32 ties."""
    d = samples(rng, n)
    k = n // 5
    bounds = np.array([2.0 ** 31, 2.0 ** 32, 2.0 ** 63, 2.0 ** 64, 1.0, 0.0])
    near = rng.choice(bounds, k) * rng.choice([-1, 1], k) + rng.choice([-1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2.5], k)
    near[: 8] = [2.0 ** 31 - 1, -2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 32 - 1, 2.0 ** 63 - 1024, -2.0 ** 63,
                 2.0 ** 64 - 2048, -0.5]
    with np.errstate(invalid="ignore"):
        f = f32_samples(rng, k).astype(np.float64)
    ties = (f + np.where(np.isfinite(f), np.abs(f), 0) * 2.0 ** -24 * rng.choice([-1, 1, 0.5, 1.5], k))
    d[:k], d[k:2 * k] = near, ties
    d[2 * k:2 * k + 3] = [3.4028235677973366e38, 3.4028235677973362e38 * 1.0000001, 2.0 ** -150]
    return rng.permutation(d)


def test_conversions_from_f64(mps_driver):
    dev = mps_driver.get_active_torch_device()
    rng = np.random.default_rng(47)
    d = _f64_conversion_inputs(rng, N)
    f32 = _poison(dev, len(D2F) * N, torch.int32).view(torch.float32)
    i32 = _poison(dev, len(D2I32) * N, torch.int32)
    i64 = _poison(dev, len(D2I64) * N, torch.int64)
    _launch(_from_f64, [torch.from_numpy(d).to(dev), f32, i32, i64], N)
    got_f = f32.cpu().view(torch.int32).numpy().view(np.uint32).reshape(len(D2F), N)
    got_i = i32.cpu().numpy().reshape(len(D2I32), N)
    got_l = i64.cpu().numpy().reshape(len(D2I64), N)
    ds = d.tolist()
    for i, name in enumerate(D2F):
        mode = name[-2:]
        want = [NAN if math.isnan(v) else bits_of(v, "f32") if (math.isinf(v) or v == 0)
                else round_frac(Fraction(v), mode, "f32") for v in ds]
        check_bits(name, got_f[i], want, (ds, ))
    rnd = {"rn": round, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}
    for got, names in ((got_i, D2I32), (got_l, D2I64)):
        for i, name in enumerate(names):
            bits = 32 if got is got_i else 64
            if name in ("double2hiint", "double2loint", "double_as_longlong"):
                u = [bits_of(v, "f64") for v in ds]
                want = {"double2hiint": [w >> 32 for w in u], "double2loint": [w & 0xFFFFFFFF for w in u],
                        "double_as_longlong": u}[name]
                want = [w - (1 << bits) if w >= 1 << (bits - 1) else w for w in want]
            else:
                signed = "2int" in name or "2ll" in name
                lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
                want = []
                for v in ds:
                    if math.isnan(v):
                        w = 0
                    elif math.isinf(v):
                        w = hi if v > 0 else lo
                    else:
                        w = min(max(rnd[name[-2:]](Fraction(v)), lo), hi)
                    want.append(w - (1 << bits) if w >= 1 << (bits - 1) else w)  # the stored signed bits
            bad = [(v, g, w) for v, g, w in zip(ds, got[i].tolist(), want, strict=True) if g != w]
            assert not bad, f"{name}: {len(bad)} wrong, first: {bad[:3]}"


def _int_inputs(rng, n: int):
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    small = rng.integers(-2**24, 2**24, n) >> rng.integers(0, 24, n)
    a = np.where(rng.integers(0, 3, n) == 0, small, a)
    a[:6] = [0, -1, 2**31 - 1, -2**31, 2**24 + 1, -(2**24 + 3)]
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    c = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    # int64: every magnitude, and values just above a power of two (ties and sticky bits of 2float / 2double)
    mag = rng.integers(0, 2**63, n, dtype=np.int64) >> rng.integers(0, 63, n)
    ll = np.where(rng.integers(0, 2, n) == 0, mag, -mag)
    top = rng.integers(24, 63, n)
    tie = (np.int64(1) << top) + (np.int64(1) << np.maximum(top - 24, 0)) * rng.integers(0, 4, n)
    tie = tie + rng.integers(0, 2, n)
    ll = np.where(rng.integers(0, 3, n) == 0, tie * rng.choice([-1, 1], n), ll)
    ll[:6] = [0, -1, 2**63 - 1, -2**63, 2**53 + 1, -(2**53 + 3)]
    return (a.astype(np.int32), b.astype(np.int32), c.astype(np.int32), ll)


def test_conversions_from_integers(mps_driver):
    dev = mps_driver.get_active_torch_device()
    rng = np.random.default_rng(53)
    a, b, c, ll = _int_inputs(rng, N)
    f64 = _poison(dev, len(TO_F64) * N, torch.int64).view(torch.float64)
    f32 = _poison(dev, len(TO_F32) * N, torch.int32).view(torch.float32)
    i32 = _poison(dev, len(INT_FNS) * N, torch.int32)
    _launch(_from_int, [torch.from_numpy(v).to(dev) for v in (a, b, c, ll)] + [f64, f32, i32], N)
    got_d = f64.cpu().view(torch.int64).numpy().view(np.uint64).reshape(len(TO_F64), N)
    got_f = f32.cpu().view(torch.int32).numpy().view(np.uint32).reshape(len(TO_F32), N)
    got_i = i32.cpu().numpy().view(np.uint32).reshape(len(INT_FNS), N)
    A, B, C, L = (v.tolist() for v in (a, b, c, ll))
    U32 = [v & 0xFFFFFFFF for v in A]
    U64 = [v & 0xFFFFFFFFFFFFFFFF for v in L]
    src = {"int": A, "uint": U32, "ll": L, "ull": U64}
    for i, name in enumerate(TO_F64):
        if name == "hiloint2double":
            want = [((h & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF) for h, lo in zip(A, B, strict=True)]
        elif name == "longlong_as_double":
            want = U64
        else:
            want = [round_frac(Fraction(v), name[-2:], "f64") for v in src[name.split("2")[0]]]
        assert got_d[i].tolist() == want, name
    for i, name in enumerate(TO_F32):
        want = [round_frac(Fraction(v), name[-2:], "f32") for v in src[name.split("2")[0]]]
        check_bits(name, got_f[i], want, (src[name.split("2")[0]], ))

    def byte_perm(x, y, s):
        v = ((y & 0xFFFFFFFF) << 32) | (x & 0xFFFFFFFF)
        return sum(((v >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4))

    def sext24(v):
        v &= 0xFFFFFF
        return v - (1 << 24) if v & 0x800000 else v

    ref = {
        "byte_perm": [byte_perm(x, y, s) for x, y, s in zip(A, B, C, strict=True)],
        "mul24": [(sext24(x) * sext24(y)) & 0xFFFFFFFF for x, y in zip(A, B, strict=True)],
        "umul24": [((x & 0xFFFFFF) * (y & 0xFFFFFF)) & 0xFFFFFFFF for x, y in zip(A, B, strict=True)],
        "sad": [(abs(x - y) + (s & 0xFFFFFFFF)) & 0xFFFFFFFF for x, y, s in zip(A, B, C, strict=True)],
        "usad": [(abs((x & 0xFFFFFFFF) - (y & 0xFFFFFFFF)) + (s & 0xFFFFFFFF)) & 0xFFFFFFFF
                 for x, y, s in zip(A, B, C, strict=True)],
    }
    ref["byte_perm_u"] = ref["byte_perm"]
    for i, name in enumerate(INT_FNS):
        assert got_i[i].tolist() == ref[name], name


def test_reference_rounding():
    """The reference itself on values whose roundings are known."""
    one = 0x3F800000
    assert round_frac(Fraction(1) + Fraction(1, 2**25), "ru", "f32") == one + 1
    assert round_frac(Fraction(1) + Fraction(1, 2**25), "rn", "f32") == one
    assert round_frac(Fraction(1) + Fraction(1, 2**24), "rn", "f32") == one  # tie to even
    assert round_frac(Fraction(1) + Fraction(3, 2**24), "rn", "f32") == one + 2  # tie to even (up)
    assert round_frac(-(Fraction(1) + Fraction(1, 2**30)), "rd", "f32") == one + 1 + 2**31
    assert round_frac(Fraction(2) ** 128, "rz", "f32") == 0x7F7FFFFF
    assert round_frac(Fraction(2) ** 128, "rn", "f32") == 0x7F800000
    assert round_frac(-Fraction(2) ** 128, "ru", "f32") == 0xFF7FFFFF
    assert round_frac(Fraction(1, 2**160), "ru", "f32") == 1  # the smallest subnormal
    assert round_frac(Fraction(3, 2**151), "rn", "f32") == 1  # 0.75 of the smallest subnormal
    assert round_to(False, Sqrt(Fraction(2)), "rn", "f64") == bits_of(math.sqrt(2), "f64")  # rounded up
    assert round_to(False, Sqrt(Fraction(2)), "rz", "f64") == bits_of(math.sqrt(2), "f64") - 1
    assert round_to(False, Sqrt(Fraction(4, 9)), "ru", "f64") == bits_of(2 / 3, "f64") + 1  # 2/3 rounds down
    assert round_frac(Fraction(1, 3), "rn", "f64") == bits_of(1 / 3, "f64")


def test_mapped_and_errors():
    from triton_mps.language import libdevice as mps_libdevice

    names = (ARITH_NAMES + D2F + D2I32 + D2I64 + [n for n in TO_F64] + TO_F32 +
             ["byte_perm", "mul24", "sad"])
    missing = [n for n in names if n not in mps_libdevice.MAPPED]
    assert not missing, missing


@triton.jit
def _wrong_dtype(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, libdevice.div_rz(x, x))


@triton.jit
def _wrong_int(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, libdevice.ll2double_rz(x))


def test_wrong_dtype_is_a_clear_error(mps_driver):
    dev = mps_driver.get_active_torch_device()
    x = torch.ones(4, dtype=torch.float16, device=dev)
    with pytest.raises(triton.CompilationError, match=r"libdevice.div_rz on the mps backend takes \(fp32, fp32\); "
                                                      r"\(fp64, fp64\); got \(fp16, fp16\)"):
        _wrong_dtype[(1,)](x, x)
    i = torch.ones(4, dtype=torch.int32, device=dev)
    with pytest.raises(triton.CompilationError, match=r"libdevice.ll2double_rz on the mps backend takes \(int64\); "
                                                      r"got \(int32\)"):
        _wrong_int[(1,)](i, torch.ones(4, dtype=torch.float64, device=dev))


@triton.jit
def _sqrt_div(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.sqrt_rz(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.sqrt_ru(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.div_rd(x, 3.0), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.div_ru(x, 3.0), mask=m)


def test_fp32_consecutive_sqrt_div(mps_driver):
    """65536 consecutive floats from 1.0 and from the smallest subnormal: sqrt_rz/ru and x / 3
    rd/ru against numpy's correctly rounded float32 result moved one step when the exact residual
    (x - r*r, x - 3r: exact in float64) says the mode needs it."""
    dev = mps_driver.get_active_torch_device()
    x = np.concatenate([np.arange(0x3F800000, 0x3F810000, dtype=np.uint32),
                        np.arange(1, 0x10001, dtype=np.uint32)]).view(np.float32)
    n = x.size
    out = _poison(dev, 4 * n, torch.int32).view(torch.float32)
    kernel_args = [torch.from_numpy(x).to(dev), out]
    _launch(_sqrt_div, kernel_args, n)
    got = out.cpu().numpy().reshape(4, n).view(np.uint32)
    xd = x.astype(np.float64)
    for row, (rn, resid, mode) in enumerate([(np.sqrt(x), lambda r: xd - r.astype(np.float64) ** 2, "rz"),
                                             (np.sqrt(x), lambda r: xd - r.astype(np.float64) ** 2, "ru"),
                                             (x / np.float32(3), lambda r: xd - 3 * r.astype(np.float64), "rd"),
                                             (x / np.float32(3), lambda r: xd - 3 * r.astype(np.float64), "ru")]):
        s = np.sign(resid(rn))
        if mode == "ru":
            want = np.where(s > 0, np.nextafter(rn, np.float32(np.inf)), rn)
        else:  # positive results: toward zero is down
            want = np.where(s < 0, np.nextafter(rn, np.float32(0)), rn)
        bad = got[row] != want.view(np.uint32)
        assert not bad.any(), (row, mode, x[bad][:3])
