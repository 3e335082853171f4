"""The simulator rejects MSL that Metal rejects, with Metal-like messages, and never runs it.

Each program is compiled with compile_msl (strict check + build). Programs that would run host
code (system(), printf, operator new) are rejected at build time, before the library is ever
loaded: the marker file that `system` would create never appears."""

from __future__ import annotations

import pytest
import triton_mps

HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
SIG = "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]])"

CASES = {
    "double": (f"{SIG} {{ double d = out[i]; out[i] = float(d * 2); }}", r"'double' is not supported in Metal"),
    "goto": (f"{SIG} {{ if (i) goto end; out[i] = 1; end: return; }}", r"'goto' is not supported in Metal"),
    "virtual": ("struct B { virtual float f() { return 1; } };\n" + f"{SIG} {{ B b; out[i] = b.f(); }}",
                r"virtual functions are not supported in Metal"),
    "inline asm": (f"{SIG} {{ asm(\"nop\"); out[i] = 1; }}", r"inline assembly is not supported in Metal"),
    "host system()": ('extern "C" int system(const char*);\n' +
                      f"{SIG} {{ out[i] = (float)system(\"touch {{marker}}\"); }}",
                      r"calls functions that are not part of Metal \(system\)"),
    "host declaration without extern": ("int printf(const char*, ...);\n" +
                                        f"{SIG} {{ out[i] = (float)printf(\"hi\"); }}",
                                        r"not part of Metal \(printf\(char const\*, \.\.\.\)\)"),
    "new/delete": (f"{SIG} {{ float* p = new float[4]; p[0] = 1; out[i] = p[0]; delete[] p; }}",
                   r"dynamic memory allocation \('new'\) is not supported in Metal"),
    "exceptions": (f"{SIG} {{ if (i > 100) throw 1; out[i] = 1; }}", r"exceptions"),
    "system header": ("#include <stdio.h>\n" + f"{SIG} {{ out[i] = 1; }}", r"stdio.h"),
    "static local": (f"{SIG} {{ static float acc = 0; acc += out[i]; out[i] = acc; }}",
                     r"\.metal:3: error: static local variables are not supported in Metal \(in function 'k'\)"),
    "recursion": ("float fact(float x) { return x <= 1 ? 1 : x * fact(x - 1); }\n"
                  + f"{SIG} {{ out[i] = fact(out[i]); }}",
                  r"recursive function calls are not supported in Metal: 'fact' -> 'fact'"),
    "mutual recursion": ("float odd(uint n);\nfloat even(uint n) { return n == 0 ? 1 : odd(n - 1); }\n"
                         "float odd(uint n) { return n == 0 ? 0 : even(n - 1); }\n" + f"{SIG} {{ out[i] = even(i); }}",
                         r"recursive function calls are not supported in Metal: 'even' -> 'odd' -> 'even'"),
    "write to constant": ("kernel void k(constant float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                          "{ ((constant float*)c)[i] = 1; }", r"error"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_strict_check_rejects(sim, tmp_path, name):
    body, message = CASES[name]
    marker = tmp_path / "ran"
    source = HEAD + body.replace("{marker}", str(marker))
    with pytest.raises(triton_mps.CompileError, match=message) as info:
        triton_mps.compile_msl(source, "k", sim, label=f"bad_{name.replace(' ', '_').replace('/', '_')}")
    assert "Metal" in str(info.value) or "error" in str(info.value)
    assert not marker.exists(), "the kernel's host call ran"


def test_rules_do_not_flag_look_alikes(sim, rng):
    """static_cast, static program-scope helpers, calls through members and a helper named like
    a local are not static locals or recursion."""
    import numpy as np

    src = HEAD + (
        "struct S { float v; float twice() const { return v * 2; } };\n"
        "static inline float twice(float x) { S s{x}; return s.twice(); }\n"
        "constant float kScale = 0.5f;\n"
        f"{SIG} {{ out[i] = twice(static_cast<float>(out[i])) * kScale; }}")
    k = triton_mps.compile_msl(src, "k", sim)
    x = rng.standard_normal(64).astype(np.float32)
    out = x.copy()
    k(out, grid=2, threads=32)
    sim.synchronize()
    np.testing.assert_array_equal(out, x)


def test_allowed_host_imports_still_build(sim, rng):
    """Math functions lower to libm calls (sinf, powf, ...): those imports are allowed."""
    import numpy as np

    src = HEAD + (f"{SIG} {{ out[i] = sin(out[i]) + pow(out[i], 1.5f) + fmod(out[i], 0.3f) + atan2(out[i], 2.0f); }}")
    k = triton_mps.compile_msl(src, "k", sim)
    x = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    out = x.copy()
    k(out, grid=2, threads=32)
    sim.synchronize()
    x64 = x.astype(np.float64)
    want = np.sin(x64) + x64 ** 1.5 + np.fmod(x64, np.float32(0.3)) + np.arctan2(x64, 2.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
