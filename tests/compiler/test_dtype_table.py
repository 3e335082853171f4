"""compiler/types.py's one dtype table against the spellings its users relied on before it."""

from __future__ import annotations

import pytest
from triton_mps.compiler.types import BY_MLIR, BY_TRITON, msl_bytes, parse_type, triton_name


def test_signature_scalars_and_host_types():
    # Triton signature type -> MSL parameter type (compile_ttgir) and host type (the driver)
    msl = {"i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long", "u1": "bool", "u8": "uchar",
           "u16": "ushort", "u32": "uint", "u64": "ulong", "fp16": "half", "bf16": "bfloat", "fp32": "float",
           "f32": "float"}
    for name, want in msl.items():
        assert BY_TRITON[name].msl == want and BY_TRITON[name].host == want
    assert BY_TRITON["fp64"].host == "double" and BY_TRITON["fp64"].msl == "ulong"


def test_driver_cpp_types():
    from triton_mps.backend.driver import MPSDriver

    to_cpp = MPSDriver.map_python_to_cpp_type
    assert to_cpp(None, "u64") == "ulong" and to_cpp(None, "fp64") == "double"
    assert to_cpp(None, "*fp16") == "device half*" and to_cpp(None, "*fp8e4nv") == "device fp8e4nv*"
    with pytest.raises(KeyError):
        to_cpp(None, "fp8e5")


def test_mlir_types():
    for name, (msl, unsigned, bits) in {"i1": ("bool", "bool", 1), "i8": ("char", "uchar", 8),
                                         "index": ("long", "ulong", 64), "f16": ("half", "ushort", 16),
                                         "f64": ("ulong", "ulong", 64), "f8E5M2": ("uchar", "uchar", 8)}.items():
        t = parse_type(name)
        assert (t.msl(), t.msl_unsigned(), t.bits) == (msl, unsigned, bits)
    assert parse_type("f8E4M3FN").is_fp8 and parse_type("bf16").is_float and parse_type("i64").is_int
    assert [triton_name(n) for n in ("f32", "f8E4M3FNUZ", "i32", "index")] == ["fp32", "fp8e4b8", "i32", "index"]
    assert msl_bytes("bool") == 1 and msl_bytes("bfloat") == 2 and msl_bytes("ulong") == 8
    assert set(BY_MLIR) >= {"i1", "i8", "i16", "i32", "i64", "index", "f16", "bf16", "f32", "f64"}
