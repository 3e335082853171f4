"""Exact constants for the MSL helper library: binary64 bit patterns, pi, ln2, ... computed
with integer and rational arithmetic, and the text builders the family modules share.

`lit(x)` is the MSL literal (`0x...ul`, the IEEE bits) of a Python float; `dd(q)` the two
literals of a rational as a double-double (hi + lo); `horner` / `series` the MSL of a polynomial
with fma steps (double, or double-double for the leading terms). Constants are correctly rounded
once from exact rationals (pi by Machin's formula, ln2 and ln10 by series, 2/sqrt(pi) by Newton).
"""

from __future__ import annotations

import struct
from decimal import Decimal, getcontext
from fractions import Fraction

# bit patterns of binary64
SIGN = 0x8000000000000000
ABS_MASK = 0x7FFFFFFFFFFFFFFF
INF_BITS = 0x7FF0000000000000
DNAN = 0x7FF8000000000000


def bits_of(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def py_value(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]


def literal_bits(bits: int) -> str:
    return f"0x{bits & 0xFFFFFFFFFFFFFFFF:016x}ul"


def lit(x: float) -> str:
    """The MSL literal (ulong bits) of a Python float as binary64."""
    return f"0x{bits_of(x):016x}ul"


def frac_to_dd(q: Fraction) -> tuple[float, float]:
    hi = q.numerator / q.denominator  # correctly rounded
    lo = (q - Fraction(hi))
    return hi, lo.numerator / lo.denominator


def _pi_fixed(bits: int) -> int:
    """floor(pi * 2^bits) (Machin's formula in integers, 32 guard bits)."""
    g = bits + 32
    one = 1 << g

    def atan_inv(n: int) -> int:
        total, term, k, n2 = 0, one // n, 1, n * n
        while term:
            total += term // k if (k // 2) % 2 == 0 else -(term // k)
            term //= n2
            k += 2
        return total

    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 32


_PI_BITS = 1400
PI = Fraction(_pi_fixed(_PI_BITS), 1 << _PI_BITS)


def _ln2() -> Fraction:
    """ln 2 to ~200 bits: sum 1/(k 2^k)."""
    g = 260
    s = sum(Fraction(1, k * (1 << k)) for k in range(1, g))
    return s


def _split(q: Fraction, bits: int) -> tuple[float, float]:
    """(hi with at most `bits` significant bits, lo = q - hi rounded)."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    scale = Fraction(2) ** (bits - 1 - e)
    hi = Fraction(int(q * scale)) / scale
    lo = q - hi
    return float(hi), lo.numerator / lo.denominator


LN2_Q = _ln2()
LN2_HI, LN2_LO = _split(LN2_Q, 32)
INVLN2_HI, INVLN2_LO = frac_to_dd(1 / LN2_Q)
PIO2_HI, PIO2_LO = frac_to_dd(PI / 2)

def two_over_pi_words(n: int = 21) -> list[int]:
    """2/pi in 64-bit words, most significant first: word j holds fraction bits 64j+1..64j+64."""
    nbits = 64 * n
    x = (1 << (nbits + 1)) * PI.denominator // PI.numerator  # floor(2/pi * 2^nbits)
    return [(x >> (64 * (n - 1 - j))) & 0xFFFFFFFFFFFFFFFF for j in range(n)]


def _sqrt_pi_dd() -> tuple[float, float]:
    """2/sqrt(pi) as a double-double (Newton on the rational approximation of pi)."""
    y = Fraction(1128379167095512573896158903121545171688, 10 ** 39)  # ~2/sqrt(pi), refined below
    target = 4 / PI  # y^2 = 4/pi
    for _ in range(4):
        y = (y + target / y) / 2
        y = Fraction(int(y * (1 << 300)), 1 << 300)
    return frac_to_dd(y)


TSP_HI, TSP_LO = _sqrt_pi_dd()


def horner(var: str, coeffs: list[float], out: str) -> str:
    """`ulong out = c0 + var*(c1 + var*(...))` with fmas (coeffs low to high order)."""
    expr = lit(coeffs[-1])
    lines = [f"  ulong {out} = {expr};"]
    for c in reversed(coeffs[:-1]):
        lines.append(f"  {out} = tmps_f64_fma({out}, {var}, {lit(c)});")
    return "\n".join(lines)


def inv_fact(n: int) -> Fraction:
    f = 1
    for i in range(2, n + 1):
        f *= i
    return Fraction(1, f)



LN2_LO2 = float(LN2_Q - Fraction(LN2_HI) - Fraction(LN2_LO))


def ln10() -> Fraction:
    """ln 10 = 3 ln2 + ln(5/4), ln(5/4) = 2 atanh(1/9)."""
    t = Fraction(1, 9)
    s = sum(2 * t ** (2 * n + 1) / (2 * n + 1) for n in range(45))
    return 3 * LN2_Q + s


def atan_fixed(p: int, q: int, bits: int = 240) -> Fraction:
    """atan(p/q) to ~`bits` bits (Euler's series, integer fixed point)."""
    d = p * p + q * q
    term = (p * q << bits) // d
    total, n = term, 1
    while term:
        term = term * 2 * n * p * p // ((2 * n + 1) * d)
        total += term
        n += 1
    return Fraction(total, 1 << bits)


def dd(q: Fraction) -> tuple[str, str]:
    h, lo = frac_to_dd(q)
    return lit(h), lit(lo)


def series(var: str, coeffs: list[Fraction], n_dd: int, out: str) -> str:
    """(out_h, out_l) = sum_n coeffs[n] var^n, var the double-double (var_h, var_l): the terms from
    n_dd on by a double Horner on var_h (they are small), the first n_dd in double-double."""
    lines = [horner(f"{var}h", [float(c) for c in coeffs[n_dd:]], f"{out}h"), f"  ulong {out}l = 0ul;"]
    for c in reversed(coeffs[:n_dd]):
        ch, cl = dd(c)
        lines.append(f"  tmps_dd_mul({out}h, {out}l, {var}h, {var}l, {out}h, {out}l);")
        lines.append(f"  tmps_dd_add({out}h, {out}l, {ch}, {cl}, {out}h, {out}l);")
    return "\n".join(lines)


NEG = "0x8000000000000000ul"
ONE = "0x3ff0000000000000ul"
PI_H, PI_L = dd(PI)
PIO2_H, PIO2_L = dd(PI / 2)
PIO4_H, PIO4_L = dd(PI / 4)
LN2_H, LN2_L = dd(LN2_Q)


INF = "0x7ff0000000000000ul"
ABS = "0x7ffffffffffffffful"
QUIET = "0x0008000000000000ul"

LN10_H, LN10_L = dd(ln10())
NAN = "0x7ff8000000000000ul"

getcontext().prec = 60  # the Decimal logs and roots of the Bessel and gamma constants
# pi and Euler's gamma as decimals (the Bessel tables and lgamma's constants use Decimal logs)
PI_DEC = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
EULER_GAMMA_DEC = Decimal("0.577215664901532860606512090082402431042159335939923598805767")


def sqrt_fraction(q: Fraction, bits: int = 240) -> Fraction:
    """sqrt(q) to ~`bits` bits (integer square root)."""
    from math import isqrt
    return Fraction(isqrt(int(q * (1 << (2 * bits)))), 1 << bits)


def dec_frac(d: Decimal) -> Fraction:
    return Fraction(str(d))


ISP_H, ISP_L = lit(TSP_HI / 2), lit(TSP_LO / 2)  # 1/sqrt(pi)
TSP = lit(TSP_HI)  # 2/sqrt(pi)
GAMMA_Q = dec_frac(EULER_GAMMA_DEC)  # Euler's gamma
LOGPI_H, LOGPI_L = dd(dec_frac(PI_DEC.ln()))  # log(pi)
