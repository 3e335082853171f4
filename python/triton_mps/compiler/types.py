"""MLIR type text -> small type objects (scalar, pointer, tensor) and their MSL spelling."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .coherence import device_ptr


@dataclass(frozen=True)
class DType:
    """Everything the backend knows about one element type: the one table (DTYPES below)."""

    mlir: str  # MLIR spelling in TTGIR ("" for types only Triton's signatures have: u32, ...)
    triton: str  # Triton signature name ("" for MLIR-only types: index)
    msl: str  # MSL type of a value: fp8 is 8-bit storage (mslib/fp8.py), f64 binary64 bits (mslib/fp64.py)
    msl_unsigned: str  # MSL unsigned type of the same width (bit manipulation)
    bits: int
    is_float: bool
    signed: bool  # integers: two's complement signed; floats: True
    # Host type the launcher packs a scalar argument as and the driver reports to Triton (f64:
    # a double, which the kernel reads as ulong bits); "" when a scalar of it cannot be passed.
    host: str

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)


def _int(mlir: str, triton: str, msl: str, unsigned: str, bits: int, signed: bool) -> DType:
    return DType(mlir, triton, msl, unsigned, bits, False, signed, msl)


def _fp8(mlir: str, triton: str) -> DType:
    return DType(mlir, triton, "uchar", "uchar", 8, True, True, "")


# i1 is `bool` (one byte in Metal, as Triton stores it).
DTYPES: tuple[DType, ...] = (
    _int("i1", "i1", "bool", "bool", 1, True),
    _int("i8", "i8", "char", "uchar", 8, True),
    _int("i16", "i16", "short", "ushort", 16, True),
    _int("i32", "i32", "int", "uint", 32, True),
    _int("i64", "i64", "long", "ulong", 64, True),
    _int("index", "", "long", "ulong", 64, True),
    _int("", "u1", "bool", "bool", 1, False),
    _int("", "u8", "uchar", "uchar", 8, False),
    _int("", "u16", "ushort", "ushort", 16, False),
    _int("", "u32", "uint", "uint", 32, False),
    _int("", "u64", "ulong", "ulong", 64, False),
    DType("f16", "fp16", "half", "ushort", 16, True, True, "half"),
    DType("bf16", "bf16", "bfloat", "ushort", 16, True, True, "bfloat"),
    DType("f32", "fp32", "float", "uint", 32, True, True, "float"),
    DType("f64", "fp64", "ulong", "ulong", 64, True, True, "double"),
    _fp8("f8E4M3FN", "fp8e4nv"),
    _fp8("f8E5M2", "fp8e5"),
    _fp8("f8E4M3FNUZ", "fp8e4b8"),
    _fp8("f8E5M2FNUZ", "fp8e5b16"),
)
BY_MLIR: dict[str, DType] = {d.mlir: d for d in DTYPES if d.mlir}
BY_TRITON: dict[str, DType] = {d.triton: d for d in DTYPES if d.triton}
BY_TRITON["f32"] = BY_TRITON["fp32"]  # older signatures spell it f32
# MSL scalar type -> bytes (threadgroup staging, scalar packing)
MSL_BYTES: dict[str, int] = {d.msl: d.bytes for d in DTYPES}


def msl_bytes(msl_t: str) -> int:
    """Size of an MSL scalar type of the table (KeyError for others)."""
    return MSL_BYTES[msl_t]


def triton_name(mlir: str) -> str:
    """Triton signature name of an MLIR element type (the MLIR name when Triton has none)."""
    d = BY_MLIR.get(mlir)
    return d.triton if d is not None and d.triton else mlir


_FP8 = tuple(d.mlir for d in DTYPES if d.mlir and d.is_float and d.bits == 8)


@dataclass(frozen=True)
class ScalarType:
    name: str  # MLIR spelling: i32, f16, bf16, ...

    @property
    def dtype(self) -> DType:
        return BY_MLIR[self.name]

    @property
    def is_float(self) -> bool:
        return BY_MLIR[self.name].is_float

    @property
    def is_fp8(self) -> bool:
        return self.name in _FP8

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @property
    def bits(self) -> int:
        return BY_MLIR[self.name].bits

    @property
    def bytes(self) -> int:
        return BY_MLIR[self.name].bytes

    def msl(self) -> str:
        if self.name not in BY_MLIR:
            raise TypeError(f"type {self.name} has no Metal equivalent")
        return BY_MLIR[self.name].msl

    def msl_unsigned(self) -> str:
        return BY_MLIR[self.name].msl_unsigned

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

    def msl(self, *, coherent: bool) -> str:
        """`device T*`; `coherent`: the kernel's KernelState.coherent (coherence.py). No default:
        a pointer spelled without the kernel's coherence would drop the qualifier."""
        p = self.pointee
        return device_ptr(p.msl(coherent=coherent) if isinstance(p, PointerType) else p.msl(), coherent)

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




@functools.lru_cache(maxsize=4096)
def parse_type(text: str):
    """The type a printed MLIR type stands for (cached: types are immutable and kernels repeat a
    few type texts thousands of times)."""
    t = text.strip()
    if t in BY_MLIR:
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
