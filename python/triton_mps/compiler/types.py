"""MLIR type text -> small type objects (scalar, pointer, tensor) and their MSL spelling."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Element type -> MSL type. i1 is `bool` (one byte in Metal, as Triton stores it).
_SCALAR_MSL = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "f16": "half", "bf16": "bfloat", "f32": "float", "index": "long",
    # fp8 formats are 8-bit storage; arithmetic converts through float (see fp8.py)
    "f8E4M3FN": "uchar", "f8E5M2": "uchar", "f8E4M3FNUZ": "uchar", "f8E5M2FNUZ": "uchar",
    # f64 is IEEE binary64 bits in a ulong, computed in software (see fp64.py)
    "f64": "ulong",
}
_FP8 = ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ")
_UNSIGNED_MSL = {"i1": "bool", "i8": "uchar", "i16": "ushort", "i32": "uint", "i64": "ulong", "index": "ulong",
                 "f64": "ulong",
                 **{n: "uchar" for n in _FP8}}
_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
         **{n: 8 for n in _FP8}}


@dataclass(frozen=True)
class ScalarType:
    name: str  # MLIR spelling: i32, f16, bf16, ...

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64") or self.name in _FP8

    @property
    def is_fp8(self) -> bool:
        return self.name in _FP8

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @property
    def bits(self) -> int:
        return _BITS[self.name]

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    def msl(self) -> str:
        if self.name not in _SCALAR_MSL:
            raise TypeError(f"type {self.name} has no Metal equivalent")
        return _SCALAR_MSL[self.name]

    def msl_unsigned(self) -> str:
        return _UNSIGNED_MSL[self.name]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType:
    pointee: ScalarType | PointerType
    address_space: int = 1

    @property
    def is_float(self) -> bool:
        return False

    @property
    def is_int(self) -> bool:
        return False

    @property
    def bits(self) -> int:
        return 64

    def msl(self) -> str:
        return f"device {self.pointee.msl()}*"

    def __str__(self) -> str:
        return f"!tt.ptr<{self.pointee}>"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    elem: ScalarType | PointerType
    encoding: str  # layout text (inline), "" if none
    text: str  # full type text: the key for the layout cache

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def msl(self) -> str:
        return self.elem.msl()


@dataclass(frozen=True)
class OtherType:
    text: str

    def msl(self) -> str:
        raise TypeError(f"type {self.text} is not supported by the Metal backend")


Type = "ScalarType | PointerType | TensorType | OtherType"


def _split_top(s: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


_SCALAR_RE = re.compile(r"^(i1|i8|i16|i32|i64|f16|bf16|f32|f64|index|f8E4M3FN|f8E5M2|f8E4M3FNUZ|f8E5M2FNUZ)$")


def parse_type(text: str):
    t = text.strip()
    if _SCALAR_RE.match(t):
        return ScalarType(t)
    if t.startswith("!tt.ptr<") and t.endswith(">"):
        inner = _split_top(t[len("!tt.ptr<"):-1])
        pointee = parse_type(inner[0])
        # `!tt.ptr<f32, 1>`; a `tl.const` pointer prints as `!tt.ptr<f32, "constant">` (read-only
        # global memory: bound like any other pointer).
        space = next((int(x) for x in inner[1:] if x.isdigit()), 1)
        return PointerType(pointee, space)
    if t.startswith("tensor<") and t.endswith(">"):
        body = t[len("tensor<"):-1]
        parts = _split_top(body)
        dims_and_elem = parts[0]
        encoding = parts[1] if len(parts) > 1 else ""
        # "64x32xf32" or "128x!tt.ptr<f32>"
        shape = []
        rest = dims_and_elem
        while True:
            m = re.match(r"^(\d+)x", rest)
            if not m:
                break
            shape.append(int(m.group(1)))
            rest = rest[m.end():]
        return TensorType(tuple(shape), parse_type(rest), encoding, t)
    return OtherType(t)


def elem_of(ty):
    """The element type of a tensor, or the type itself."""
    return ty.elem if isinstance(ty, TensorType) else ty
