"""MSL language versions in the simulator (issue 18 item 3): `__METAL_VERSION__` is the version a
kernel is compiled for, and API that Metal introduced later is hidden below it, so a kernel that
Metal would reject at that version fails here too (docs/msl-versions.md)."""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps

VERSION = "kernel void k(device uint* o [[buffer(0)]]) { o[0] = __METAL_VERSION__; }"


@pytest.mark.parametrize("version, value", [("3.1", 310), ("3.2", 320)])
def test_metal_version_is_the_version_compiled_for(sim, version, value):
    k = triton_mps.compile_msl(VERSION, "k", sim, language_version=version)
    out = np.zeros(1, np.uint32)
    k(out, grid=1, threads=1)
    sim.synchronize()
    assert out[0] == value


FENCE = """#include <metal_stdlib>
using namespace metal;
kernel void k(device atomic_uint* c [[buffer(0)]]) {
  atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
  %s
}"""


DEVICE_FENCE = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);"


@pytest.mark.parametrize("call, name", [
    (DEVICE_FENCE, "atomic_thread_fence"),
    ("atomic_fetch_add_explicit(c, 1u, memory_order_seq_cst);", "memory_order_seq_cst"),
    ("atomic_fetch_add_explicit(c, 1u, memory_order_acquire);", "memory_order_acquire"),
    ("(void)thread_scope_device;", "thread_scope_device"),
])
def test_msl_3_2_api_fails_at_3_1(sim, call, name):
    with pytest.raises(triton_mps.CompileError, match=name):
        triton_mps.compile_msl(FENCE % call, "k", sim, language_version="3.1")


def test_device_fence_compiles_and_runs_at_3_2(sim):
    k = triton_mps.compile_msl(FENCE % DEVICE_FENCE, "k", sim, language_version="3.2")
    c = np.zeros(1, np.uint32)
    k(c, grid=3, threads=2)
    sim.synchronize()
    assert c[0] == 6


@pytest.mark.parametrize("version, message", [("3.0", "older than MSL 3.1"), ("3", "not of the form")])
def test_unsupported_language_versions_are_refused(sim, version, message):
    # Below 3.1 the shim would still declare 3.1 API (bfloat...): refused, not silently lax.
    with pytest.raises(triton_mps.InvalidArgument, match=message):
        triton_mps.compile_msl(VERSION, "k", sim, language_version=version)


def test_unguarded_msl32_finds_3_2_api_outside_version_checks():
    from tmps_testing import unguarded_msl32

    guarded = ("#if __METAL_VERSION__ >= 320\n#pragma METAL fp contract(off)\n#define F() %s\n"
               "#else\n#define F()\n#endif\n")
    assert unguarded_msl32(guarded % DEVICE_FENCE) == []
    assert unguarded_msl32(f"#if __METAL_VERSION__ >= 320\n#else\n{DEVICE_FENCE}\n#endif\n") == [DEVICE_FENCE]
    assert unguarded_msl32(f"#ifdef X\n  {DEVICE_FENCE}\n#endif\n") == [f"  {DEVICE_FENCE}"]
    assert unguarded_msl32("x = atomic_load_explicit(p, memory_order_acquire); // memory_order_relaxed") != []
    assert unguarded_msl32("// atomic_thread_fence is 3.2 only\nx = 1;") == []


# MSL 3.2 coherent(device) (issue 18 item 4): the compiler declares a fenced kernel's buffers
# through the guarded TMPS_COHERENT macro; the simulator's memory is coherent, so it is a no-op.
COHERENT = """#include <metal_stdlib>
using namespace metal;
#if __METAL_VERSION__ >= 320
#define TMPS_COHERENT coherent(device)
#else
#define TMPS_COHERENT
#endif
kernel void k(%s float* o [[buffer(0)]], device const float* x [[buffer(1)]]) { o[0] = x[0] + 1.0f; }"""


def _run_coherent(sim, qualifier: str, version: str):
    k = triton_mps.compile_msl(COHERENT % qualifier, "k", sim, language_version=version)
    o, x = np.zeros(1, np.float32), np.full(1, 2.0, np.float32)
    k(o, x, grid=1, threads=1)
    sim.synchronize()
    assert o[0] == 3.0
    return k


@pytest.mark.parametrize("qualifier", ["coherent(device) device", "device coherent(device)"])
def test_coherent_device_compiles_at_3_2(sim, qualifier):
    k = _run_coherent(sim, qualifier, "3.2")
    # the scanner reads it as a qualifier, not as part of the type
    assert (k.params[0]["type"], k.params[0]["space"], k.params[0]["is_pointer"]) == ("float", "device", True)


def test_coherent_device_fails_at_3_1(sim):
    with pytest.raises(triton_mps.CompileError, match=r"coherent_device_needs_MSL_3_2"):
        triton_mps.compile_msl(COHERENT % "coherent(device) device", "k", sim, language_version="3.1")


@pytest.mark.parametrize("version", ["3.1", "3.2"])
def test_guarded_coherent_macro_compiles_at_every_version(sim, version):
    k = _run_coherent(sim, "TMPS_COHERENT device", version)
    assert k.params[0]["type"] == "float"


@pytest.mark.parametrize("decl, message", [
    ("coherent(threadgroup) device", r"expected coherent\(device\)"),
    ("coherent(device) constant", r"coherent\(device\) applies to device pointers"),
])
def test_misplaced_coherent_is_rejected_by_the_scanner(sim, decl, message):
    with pytest.raises(triton_mps.CompileError, match=message):
        triton_mps.compile_msl(COHERENT % decl, "k", sim, language_version="3.2")


@pytest.mark.parametrize("version", ["3.1", "3.2"])
def test_selftest_last_block_reads_partials_through_coherent_pointer(sim, version):
    # the selftest checks on a Mac what fenced Triton kernels rely on: coherent partials at 3.2
    from triton_mps import selftest

    assert "COHERENT device float* partial" in selftest.LAST_BLOCK
    k = triton_mps.compile_msl(selftest.LAST_BLOCK, "last_block", sim, language_version=version)
    assert next(p for p in k.params if p["name"] == "partial")["type"] == "float"
