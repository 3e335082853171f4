"""Triton's scalar semantics modelled in numpy: the reference side of the differential fuzzer.

Values are numpy arrays: integers in their own numpy dtype (arithmetic wraps like Triton's), bools
as numpy bool, and every float type as float64 holding a value exactly representable in that type.
Each float operation is computed in float64 and rounded once to the target type (`round_float`):
for +, -, *, / and fmod, float64 has more than 2p+2 bits for p <= 24, so this double rounding
is innocuous and the model is bit-exact (IEEE round-to-nearest-even, subnormals, overflow to inf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ty:
    name: str  # triton.language name
    kind: str  # "b" bool, "u" unsigned, "i" signed, "f" float
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:  # bool excluded
        return self.kind in "ui"

    @property
    def tl(self) -> str:
        return f"tl.{self.name}"

    @property
    def np(self) -> np.dtype:
        return np.dtype(_NP[self.name])

    def int_range(self) -> tuple[int, int]:
        if self.kind == "u":
            return 0, 2**self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1


_NP = {"int1": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
       "uint8": "uint8", "uint32": "uint32", "float16": "float64", "bfloat16": "float64", "float32": "float64"}
TYPES = {n: Ty(n, k, b) for n, k, b in [
    ("int1", "b", 1), ("int8", "i", 8), ("int16", "i", 16), ("int32", "i", 32), ("int64", "i", 64),
    ("uint8", "u", 8), ("uint32", "u", 32), ("float16", "f", 16), ("bfloat16", "f", 16), ("float32", "f", 32)]}
BOOL, I32, F32 = TYPES["int1"], TYPES["int32"], TYPES["float32"]
STORABLE = [t for t in TYPES.values() if t.kind != "b"]

# (precision p incl. the implicit bit, emin, emax)
FMT = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127), "float32": (24, -126, 127)}


def max_finite(t: Ty) -> float:
    p, _, emax = FMT[t.name]
    return (2 - 2.0 ** (1 - p)) * 2.0**emax


def unit_roundoff(t: Ty) -> float:
    return 2.0 ** -FMT[t.name][0]


# ---- Triton's type promotion (triton/language/semantic.py, computation_type_impl) -------------

def integer_promote(a: Ty, b: Ty) -> Ty:
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    if a.kind == "u":
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def _kind_rank(t: Ty) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2}[t.kind]


def computation_type(a: Ty, a_scalar: bool, b: Ty, b_scalar: bool, div_or_mod: bool = False) -> Ty:
    """Result type of a binary arithmetic op; a Python scalar of a lower or equal kind does not
    take part in the promotion."""
    if a_scalar != b_scalar:
        s, t = (a, b) if a_scalar else (b, a)
        if _kind_rank(s) <= _kind_rank(t):
            a = b = t
    if div_or_mod and (a.is_float or b.is_float):
        return F32
    if a.name == "float32" or b.name == "float32":
        return F32
    if a.name == "float16" or b.name == "float16":
        return TYPES["float16"]
    if a.name == "bfloat16" and b.name == "bfloat16":
        return a
    if a.name == "bfloat16" or b.name == "bfloat16":
        return F32
    return integer_promote(a, b)


# ---- exact rounding and conversions ------------------------------------------------------------

def round_float(x: np.ndarray, t: Ty, rtz: bool = False) -> np.ndarray:
    """Round float64 values to float type t: to nearest, ties to even (overflow to inf), or with
    `rtz` toward zero (overflow to the largest finite value)."""
    x = np.asarray(x, dtype=np.float64)
    p, emin, emax = FMT[t.name]
    out = x.copy()
    sel = np.isfinite(x) & (x != 0)
    v = x[sel]
    _, e = np.frexp(v)  # v = m * 2**e with 0.5 <= |m| < 1
    scale = np.maximum(e - 1, emin) - (p - 1)
    y = np.ldexp((np.trunc if rtz else np.rint)(np.ldexp(v, -scale)), scale)
    big = np.copysign(max_finite(t) if rtz else np.inf, y)
    out[sel] = np.where(np.abs(y) > max_finite(t), big, y)
    return out


def _int_to_float(v: np.ndarray, t: Ty) -> np.ndarray:
    """Exact (single rounding) conversion of integers to float type t."""
    shape = np.shape(v)
    v = np.atleast_1d(v)
    wide = v.astype(np.float64)
    big = np.abs(v.astype(np.float64)) >= 2.0**53 if v.dtype.kind == "i" else v.astype(np.float64) >= 2.0**53
    if big.any():  # float64 itself would round: round the Python integer to p bits directly
        p = FMT[t.name][0]
        for idx in np.argwhere(big):
            idx = tuple(idx)
            m = int(v[idx])
            sign, m = (-1 if m < 0 else 1), abs(m)
            shift = m.bit_length() - p
            if shift > 0:
                q, r = divmod(m, 1 << shift)
                half = 1 << (shift - 1)
                if r > half or (r == half and q & 1):
                    q += 1
                m = q << shift
            wide[idx] = sign * float(m)
    return round_float(wide, t).reshape(shape)


def convert(x: np.ndarray, src: Ty, dst: Ty) -> np.ndarray:
    """Triton's value conversion (tl.tensor.to without bitcast; also implicit promotion)."""
    if src == dst:
        return x
    if dst.kind == "b":
        return np.asarray(x != 0)
    if src.kind == "b":
        return x.astype(np.float64 if dst.is_float else dst.np)
    if src.is_float and dst.is_float:
        return round_float(x, dst)
    if src.is_int and dst.is_int:
        return x.astype(dst.np)  # C casts: truncation / sign or zero extension
    if src.is_int and dst.is_float:
        return _int_to_float(x, dst)
    # float -> int: the generator clamps into range first; NaN only in undefined lanes (the caller
    # checks the defined ones), which are clipped here only to keep numpy quiet
    y = np.trunc(np.where(np.isfinite(x), x, 0.0))
    lo, hi = dst.int_range()
    return np.clip(y, max(lo, -(2.0**63)), min(hi, 2.0**63 - 1024)).astype(dst.np)  # largest float64 < 2**63


_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def float_bits(x: np.ndarray, t: Ty) -> np.ndarray:
    """The bit pattern (unsigned) of float-type values held as float64."""
    if t.name == "float16":
        return x.astype(np.float16).view(np.uint16)
    if t.name == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(np.float32).view(np.uint32)


def bits_float(u: np.ndarray, t: Ty) -> np.ndarray:
    if t.name == "float16":
        return u.astype(np.uint16).view(np.float16).astype(np.float64)
    if t.name == "bfloat16":
        return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def bitcast(x: np.ndarray, src: Ty, dst: Ty) -> tuple[np.ndarray, np.ndarray]:
    """Bitcast between same-width types; returns (value, undefined): a float NaN's payload is not
    defined by Triton (arithmetic may produce any NaN), so its bits are undefined."""
    undef = np.isnan(x) if src.is_float else np.zeros(np.shape(x), bool)
    u = float_bits(np.where(undef, 0.0, x), src) if src.is_float else x.view(_UNSIGNED[src.bits])
    if dst.is_float:
        v = bits_float(u, dst)
        # A signalling NaN is undefined from here: LLVM lets minnum/maxnum of one return either
        # a quiet NaN or the other operand, and the model does not track signalling-ness.
        p = FMT[dst.name][0]
        quiet_bit = np.asarray(u).astype(np.uint64) >> np.uint64(p - 2) & np.uint64(1)
        undef = undef | (np.isnan(v) & (quiet_bit == 0))
        return np.where(np.isnan(v), np.nan, v), undef  # and a quiet NaN in the model
    return u.astype(_UNSIGNED[dst.bits]).view(dst.np), undef


def float_to_int_bounds(src: Ty, dst: Ty) -> tuple[float, float]:
    """Clamp bounds that make a src -> dst conversion defined: in dst's range and exactly
    representable in src (at most 8 significant bits, within float16's range for float16)."""
    lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32640), "int32": (-(2**31), 127 << 24),
              "uint32": (0, 255 << 24), "int64": (-(2**63), 127 << 56)}[dst.name]
    if src.name == "float16":
        lo, hi = max(lo, -65504), min(hi, 65504)
    return float(lo), float(hi)
