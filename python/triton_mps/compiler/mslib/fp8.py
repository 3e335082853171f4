"""fp8 formats: 8-bit storage (`uchar`) with exact software conversions to and from float.

Metal has no 8-bit floats. Every fp8 value lives in a `uchar`; arithmetic widens it to float
(exact: every fp8 value is a float, and a half and a bfloat too), computes, and rounds back.
One program-scope MSL helper per conversion and rounding mode, emitted on first use.

Formats (MLIR spelling -> Triton name), with the semantics of Triton's own lowerings:

| MLIR          | Triton    | exp/man/bias | specials                                     |
|---------------|-----------|--------------|----------------------------------------------|
| f8E4M3FN      | fp8e4nv   | 4/3/7        | no inf; NaN = S.1111.111; max 448            |
| f8E5M2        | fp8e5     | 5/2/15       | IEEE: inf = S.11111.00, NaN S.11111.xx; max 57344 |
| f8E4M3FNUZ    | fp8e4b8   | 4/3/8        | no inf, no -0; NaN = 0x80 only; max 240      |
| f8E5M2FNUZ    | fp8e5b16  | 5/2/16       | no inf, no -0; NaN = 0x80 only; max 57344    |

Downcasts (float -> fp8) round to nearest even by default and toward zero for
`fp_downcast_rounding="rtz"`; they saturate ("satfinite", as CUDA's `cvt.*.satfinite`, which
Triton's test_typeconvert_downcast_clamping expects): finite overflow and +-inf become +-max,
NaN becomes the format's NaN. For the fnuz formats a result of -0 becomes +0 (0x80 is NaN).

fp8e4b15 (Triton's own format, bias 15, no NaN) is `i8` in MLIR, so Triton converts it in the
front end through the backend's `convert_custom_types` (triton_mps/language/fp8e4b15.py).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fp8Format:
    key: str  # short name used in helper names
    ebits: int
    mbits: int
    bias: int
    kind: str  # "ieee" (inf and NaNs), "fn" (no inf, NaN = all ones), "fnuz" (NaN = 0x80, no -0)

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_code(self) -> int:
        """Largest finite magnitude code."""
        if self.kind == "ieee":
            return ((1 << self.ebits) - 2) << self.mbits | ((1 << self.mbits) - 1)
        if self.kind == "fn":
            return 0x7E
        return 0x7F

    @property
    def max_value(self) -> float:
        return decode(self, self.max_code)


FORMATS: dict[str, Fp8Format] = {
    "f8E4M3FN": Fp8Format("e4m3fn", 4, 3, 7, "fn"),
    "f8E5M2": Fp8Format("e5m2", 5, 2, 15, "ieee"),
    "f8E4M3FNUZ": Fp8Format("e4m3fnuz", 4, 3, 8, "fnuz"),
    "f8E5M2FNUZ": Fp8Format("e5m2fnuz", 5, 2, 16, "fnuz"),
}


def is_fp8(name: str) -> bool:
    return name in FORMATS


# ---- Python reference (literals; also what the tests compare against) -------------------------

def decode(fmt: Fp8Format, code: int) -> float:
    code &= 0xFF
    sign = -1.0 if code & 0x80 else 1.0
    e = (code >> fmt.mbits) & ((1 << fmt.ebits) - 1)
    m = code & ((1 << fmt.mbits) - 1)
    if fmt.kind == "fnuz" and code == 0x80:
        return math.nan
    if fmt.kind == "fn" and (code & 0x7F) == 0x7F:
        return math.nan
    if fmt.kind == "ieee" and e == (1 << fmt.ebits) - 1:
        return math.nan if m else sign * math.inf
    if e == 0:
        return sign * m * 2.0 ** (fmt.emin - fmt.mbits)
    return sign * (m + (1 << fmt.mbits)) * 2.0 ** (e - fmt.bias - fmt.mbits)


def encode(fmt: Fp8Format, value: float, rounding: str = "rtne") -> int:
    """float32 value -> code, with the same algorithm as the MSL helper."""
    if math.isnan(value):
        return 0x80 if fmt.kind == "fnuz" else 0x7F
    value = struct.unpack("<f", struct.pack("<f", value))[0] if math.isfinite(value) else value
    sign = 0x80 if math.copysign(1.0, value) < 0 else 0
    a = min(abs(value), fmt.max_value)
    e = max(math.frexp(a)[1] - 1 if a > 0 else fmt.emin, fmt.emin)
    scaled = a * 2.0 ** (fmt.mbits - e)
    m = int(round(scaled)) if rounding == "rtne" else int(scaled)  # Python's round() is half-even
    code = m + ((e - fmt.emin) << fmt.mbits)
    code |= sign
    if fmt.kind == "fnuz" and code == 0x80:
        code = 0
    return code


# ---- MSL helpers ----------------------------------------------------------------------------

def _flit(x: float) -> str:
    return f"{x!r}f"


def to_f32_helper(fmt: Fp8Format) -> tuple[str, str]:
    """(function name, program-scope definition) of fp8 -> float."""
    name = f"tmps_{fmt.key}_to_f32"
    emask, mmask = (1 << fmt.ebits) - 1, (1 << fmt.mbits) - 1
    if fmt.kind == "fnuz":
        special = "  if (c == 0x80u) return NAN;\n"
    elif fmt.kind == "fn":
        special = "  if ((c & 0x7fu) == 0x7fu) return NAN;\n"
    else:
        special = f"  if (e == {emask}u) return m != 0u ? NAN : (s != 0u ? -INFINITY : INFINITY);\n"
    text = f"""static inline float {name}(uchar code) {{
  // exact: every {fmt.key} value is a float; subnormals scaled by a power of two
  uint c = (uint)code, s = c & 0x80u, e = (c >> {fmt.mbits}) & {emask}u, m = c & {mmask}u;
{special}  float v = e == 0u ? (float)m * {_flit(2.0 ** (fmt.emin - fmt.mbits))}
                   : as_type<float>(((e + {127 - fmt.bias}u) << 23) | (m << {23 - fmt.mbits}));
  return s != 0u ? -v : v;
}}
"""
    return name, text


def from_f32_helper(fmt: Fp8Format, rounding: str) -> tuple[str, str]:
    """(function name, definition) of float -> fp8 with `rounding` ("rtne" or "rtz")."""
    name = f"tmps_f32_to_{fmt.key}_{rounding}"
    nan = "0x80" if fmt.kind == "fnuz" else "(uchar)(0x7fu | s)"
    rnd = "rint" if rounding == "rtne" else "trunc"
    fix_neg_zero = "  if (code == 0x80u) code = 0u;  // no -0 in fnuz formats\n" if fmt.kind == "fnuz" else ""
    text = f"""static inline uchar {name}(float x) {{
  // {rounding} on the {fmt.key} grid, saturating to +-{fmt.max_value:g} (inf too); NaN -> NaN.
  uint s = (as_type<uint>(x) >> 24) & 0x80u;
  if (x != x) return {nan};
  float a = fmin(fabs(x), {_flit(fmt.max_value)});
  // binade of a (not below the subnormal one); scaling by a power of two is exact here
  int e = max((int)((as_type<uint>(a) >> 23) & 0xffu) - 127, {fmt.emin});
  float scaled = a * as_type<float>((uint)(127 + {fmt.mbits} - e) << 23);
  uint code = (uint){rnd}(scaled) + ((uint)(e - ({fmt.emin})) << {fmt.mbits});  // a carry bumps the exponent
  code |= s;
{fix_neg_zero}  return (uchar)code;
}}
"""
    return name, text


def fp8_to_float(ctx: Any, t: Any, x: str) -> str:
    """An fp8 byte `x` of scalar type `t` (types.ScalarType) as a float (exact)."""
    name, text = to_f32_helper(FORMATS[t.name])
    ctx.e.helper(name, text)
    return f"{name}({x})"


def float_to_fp8(ctx: Any, t: Any, x: str, rounding: str = "rtne") -> str:
    """A float expression `x` rounded to fp8 type `t` (`rounding` "rtne" or "rtz", saturating)."""
    name, text = from_f32_helper(FORMATS[t.name], rounding)
    ctx.e.helper(name, text)
    return f"{name}({x})"
