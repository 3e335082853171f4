"""The simulator's metal_stdlib shim: its unit self-test, and the msl/ corpus beside it through the
real pipeline (frontend, strict Metal check, build) on the simulator."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton_mps
from triton_mps import _setup

MSL = Path(__file__).parent / "msl"
KERNEL = re.compile(r"kernel\s+void\s+(\w+)\s*\(")


def _zig() -> str:
    zig = os.environ.get("TRITON_MPS_ZIG") or _setup.find_zig()
    assert zig, "the simulator's compiler (ziglang) is not installed"
    return zig


def test_shim_unit_selftest(tmp_path):
    """~1100 checks of types, vector constructors, math, bfloat/half rounding, atomics,
    collectives and simdgroup_matrix, run against a mock runtime."""
    so = tmp_path / "shim_selftest.so"
    tc = triton_mps._core.sim_toolchain()
    # TMPS_SIM_SUPPORT: the self-test library also holds the shim's out-of-line functions (the
    # support object every kernel library links).
    flags = ["-fPIC", "-O2", "-g0", "-nostdinc", "-nostdinc++", "-fno-exceptions",
             "-fno-rtti", "-Xclang", "-ffloat16-excess-precision=none", "-Xclang",
             "-fbfloat16-excess-precision=none", "-std=c++17", "-DTMPS_SIM_SUPPORT=1",
             "-D__METAL_VERSION__=320",  # the newest MSL: every declaration of the shim
             f"-I{triton_mps._core.sim_shim_dir()}", *tc["target_flags"], "-x", "c++",
             str(MSL / "shim_selftest.cpp")]
    if tc["compile_command"]:  # direct mode: the toolchain's clang, then its linker
        obj = tmp_path / "shim_selftest.o"
        cmds = [[*tc["compile_command"], "-c", *flags, "-o", str(obj)],
                [*tc["link_command"], "-shared", str(obj), "-o", str(so)]]
    else:
        cmds = [[_zig(), "c++", "-shared", *flags, "-o", str(so)]]
    for cmd in cmds:
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # In a child process: a crash in the self-test must not take pytest down.
    run = subprocess.run(
        [sys.executable, "-c", f"import ctypes, sys; sys.exit(ctypes.CDLL({str(so)!r}).run_all())"],
        capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAIL" not in run.stdout


@pytest.mark.parametrize("path", sorted(MSL.glob("*.metal")), ids=lambda p: p.name)
def test_corpus_compiles_strict(sim, path):
    source = path.read_text()
    names = KERNEL.findall(source)
    assert names, f"no kernel in {path.name}"
    for name in names:
        k = triton_mps.compile_msl(source, name, sim, label=path.stem)
        assert k.name == name


def test_strict_check_rejects_each_violation(sim):
    source = (MSL / "strict_rejects.metal_bad").read_text()
    with pytest.raises(triton_mps.CompileError) as info:
        triton_mps.compile_msl(source, "bad", sim)
    message = str(info.value)
    # device->thread, write to constant (x2), threadgroup->device, double: one error each.
    for line in (7, 8, 9, 10, 11):
        assert f":{line}:" in message, f"line {line} not reported:\n{message}"


_SIMD_VALUE_KERNEL = """#include <metal_stdlib>
using namespace metal;
kernel void k(device {t}* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
  {t} v = {t}(({e})(i & 1u));
  out[i] = {fn}(v, (ushort)1);
}}
"""


@pytest.mark.parametrize("t,e", [("uint4", "uint"), ("float2", "float"), ("half3", "half"), ("int", "int"),
                                 ("short4", "short"), ("uchar2", "uchar"), ("char", "char"), ("bfloat", "bfloat")])
@pytest.mark.parametrize("fn", ["simd_shuffle_xor", "simd_broadcast", "quad_shuffle_down"])
def test_strict_accepts_metal_simd_values(sim, t, e, fn):
    """Scalars and 2- to 4-vectors of Metal's 8- to 32-bit types pass the strict check (the
    compiler batches shuffles into uint2..uint4)."""
    k = triton_mps.compile_msl(_SIMD_VALUE_KERNEL.format(t=t, e=e, fn=fn), "k", sim)
    assert k.name == "k"


@pytest.mark.parametrize("t,e", [("bool", "bool"), ("long", "long"), ("ulong2", "ulong"), ("bool4", "bool")])
@pytest.mark.parametrize("fn", ["simd_shuffle_xor", "simd_broadcast", "quad_shuffle_down"])
def test_strict_rejects_other_simd_values(sim, t, e, fn):
    """bool and 64-bit values are not Metal SIMD-group values (Metal code moves them with as_type):
    the strict check says so, naming the line."""
    with pytest.raises(triton_mps.CompileError) as info:
        triton_mps.compile_msl(_SIMD_VALUE_KERNEL.format(t=t, e=e, fn=fn), "k", sim)
    assert "not a Metal SIMD-group value type" in str(info.value)
    assert ":5:" in str(info.value), str(info.value)
