"""Issue 31's leftovers: every libdevice function comes from a row of the math table (its
`libdevice` names and `signatures`), the guarded MSL 3.2 macros are mslib registry entries, and a
pointer type is spelled with the kernel's coherence passed in (no ContextVar)."""

import pytest
import triton_mps.language.libdevice as lib
from triton_mps import math_functions as mf
from triton_mps.compiler import abi
from triton_mps.compiler.mslib import macros
from triton_mps.compiler.mslib.registry import LIB, use_in
from triton_mps.compiler.types import PointerType, ScalarType


def test_every_libdevice_function_is_a_table_name():
    assert set(lib.MAPPED) == set(mf.LIBDEVICE)


def test_signatures_expand_over_the_rows_float_types():
    assert mf.LIBDEVICE["ldexp"] == mf.LIBDEVICE["scalbn"] == {
        (t, "int32"): ("tmps_ldexp", t) for t in ("fp32", "fp16", "bf16", "fp64")}
    assert mf.LIBDEVICE["isfinited"] == {("fp64", ): ("tmps_isfinite", "int1")}
    assert mf.LIBDEVICE["clz"] == {("int32", ): ("tmps_clz", "int32"), ("int64", ): ("tmps_clz", "int32")}
    # a name may gather rows: same-type pow, then powi; fabs on floats, then iabs on integers
    assert [s for s, _ in mf.LIBDEVICE["pow"].values()] == ["tmps_pow"] * 4 + ["tmps_powi"] * 4
    assert mf.LIBDEVICE["abs"][("int64", )] == ("tmps_iabs", "int64")
    assert mf.LIBDEVICE["double2ull_rz"] == {("fp64", ): ("tmps_d2u_rz", "uint64")}
    assert "int2double_rz" not in mf.LIBDEVICE and "int2double_rn" in mf.LIBDEVICE


def test_a_bad_signature_names_its_row():
    with pytest.raises(ValueError, match="bad libdevice signature"):
        _ = mf.MathFn("x", "({0})", signatures=("x(T) => T", )).libdevice_signatures


def test_guarded_macros_are_registry_entries():
    helpers: dict[str, str] = {}
    use_in(helpers, macros.COHERENT)
    use_in(helpers, macros.DEVICE_FENCE)
    assert list(helpers) == [abi.COHERENT, "TMPS_DEVICE_FENCE"]
    assert helpers[abi.COHERENT] == LIB[abi.COHERENT].text
    assert "#define TMPS_COHERENT coherent(device)" in helpers[abi.COHERENT]
    assert abi.DEVICE_FENCE.rstrip("()") in helpers["TMPS_DEVICE_FENCE"]


def test_a_pointer_type_is_spelled_with_the_coherence_passed():
    p = PointerType(ScalarType("f32"))
    assert p.msl(coherent=False) == "device float*"
    assert p.msl(coherent=True) == "TMPS_COHERENT device float*"
    with pytest.raises(TypeError):
        p.msl()  # no default: a pointer spelled without the kernel's coherence would drop it
