"""Memcheck on the simulator: every device-memory access is checked against its buffer.

An out-of-bounds access, even by one element on either side, raises DispatchError naming the
kernel, the buffer, the offset, the thread and the MSL line, and never touches the memory
beside the buffer (the canaries around a view stay intact). The device stays usable.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

SHIFTED = r"""
#include <metal_stdlib>
using namespace metal;
kernel void shifted(device float* out [[buffer(0)]], const device float* x [[buffer(1)]],
                    constant int& shift [[buffer(2)]], constant int& read_shift [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  float v = x[int(i) + read_shift];
  out[int(i) + shift] = v * 2.0f;
}
"""
# The same accesses in two other spellings. Memcheck checks `p[i]` above and `*p` inline
# (sim/checked_access.h); `*(p + i)` (a pointer expression the rewrite does not type) through
# AddressSanitizer's calls. Same reports, same lines.
SHIFTED_DEREF = r"""
#include <metal_stdlib>
using namespace metal;
kernel void shifted(device float* out [[buffer(0)]], const device float* x [[buffer(1)]],
                    constant int& shift [[buffer(2)]], constant int& read_shift [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  const device float* src = x + (int(i) + read_shift); float v = *src;
  device float* dst = out + (int(i) + shift); *dst = v * 2.0f;
}
"""
SHIFTED_INSTRUMENTED = SHIFTED.replace("x[int(i) + read_shift]", "*(x + (int(i) + read_shift))").replace(
    "out[int(i) + shift] =", "*(out + (int(i) + shift)) =")
STORE_LINE = 8  # MSL line of the store above
LOAD_LINE = 7

N = 16
PAD = 8


def _views(rng):
    """`out` and `x` as views into larger arrays whose pads are canaries."""
    big_out = np.full(N + 2 * PAD, 12345.0, np.float32)
    big_x = rng.standard_normal(N + 2 * PAD).astype(np.float32)
    return big_out, big_out[PAD:PAD + N], big_x, big_x[PAD:PAD + N]


def _assert_canaries(big_out, before_x, big_x):
    np.testing.assert_array_equal(big_out[:PAD], 12345.0)
    np.testing.assert_array_equal(big_out[PAD + N:], 12345.0)
    np.testing.assert_array_equal(big_x, before_x)


def _run_ok(dev, k, rng):
    big_out, out, big_x, x = _views(rng)
    out[:] = np.nan
    k(out, x, 0, 0, grid=1, threads=N)
    dev.synchronize()
    np.testing.assert_allclose(out, 2.0 * x.astype(np.float64), rtol=1e-6)


@pytest.fixture(params=["indexed", "deref", "instrumented"])
def shifted(sim, request, monkeypatch):
    src = {"indexed": SHIFTED, "deref": SHIFTED_DEREF, "instrumented": SHIFTED_INSTRUMENTED}[request.param]
    # -O2 at once: the inline checks are in -O2 builds only (-O0 ones call AddressSanitizer's
    # hooks); a source of its own, so no earlier -O0 build of it is reused
    monkeypatch.setenv("TRITON_MPS_SIM_OPT", "2")
    return triton_mps.compile_msl(src + "// built -O2\n", "shifted", sim, memcheck=True)


@pytest.mark.parametrize("shift, where, offset", [
    (1, "past the end of buffer(0) 'out'", "byte offset 64 (element 16)"),
    (-1, "before buffer(0) 'out'", "byte offset -4 (element -1)"),
    # every thread is out of bounds: the first to run (the last thread) is reported
    (N, "past the end of buffer(0) 'out'", "byte offset 124 (element 31)"),
])
def test_store_out_of_bounds_by_small_amounts(sim, shifted, rng, shift, where, offset):
    big_out, out, big_x, x = _views(rng)
    before = big_x.copy()
    with pytest.raises(triton_mps.DispatchError) as info:
        shifted(out, x, shift, 0, grid=1, threads=N)
        sim.synchronize()
    msg = str(info.value)
    assert "kernel 'shifted'" in msg and "out-of-bounds store of 4 bytes" in msg, msg
    assert where in msg and offset in msg, msg
    assert "(float*, 16 elements = 64 bytes)" in msg, msg
    assert f"line {STORE_LINE}" in msg, msg
    assert "thread (" in msg and "threadgroup (0,0,0)" in msg, msg
    _assert_canaries(big_out, before, big_x)
    _run_ok(sim, shifted, rng)


@pytest.mark.parametrize("read_shift, where", [(1, "past the end of buffer(1) 'x'"), (-1, "before buffer(1) 'x'")])
def test_load_out_of_bounds_by_one(sim, shifted, rng, read_shift, where):
    big_out, out, big_x, x = _views(rng)
    before = big_x.copy()
    with pytest.raises(triton_mps.DispatchError) as info:
        shifted(out, x, 0, read_shift, grid=1, threads=N)
        sim.synchronize()
    msg = str(info.value)
    assert "out-of-bounds load of 4 bytes" in msg and where in msg and f"line {LOAD_LINE}" in msg, msg
    _assert_canaries(big_out, before, big_x)
    _run_ok(sim, shifted, rng)


def test_store_far_out_of_bounds(sim, shifted, rng):
    big_out, out, big_x, x = _views(rng)
    with pytest.raises(triton_mps.DispatchError, match=r"outside every buffer bound to the kernel"):
        shifted(out, x, 1_000_000_000, 0, grid=1, threads=N)
        sim.synchronize()
    with pytest.raises(triton_mps.DispatchError, match=r"outside every buffer bound to the kernel"):
        shifted(out, x, -1_000_000_000, 0, grid=1, threads=N)
        sim.synchronize()
    _run_ok(sim, shifted, rng)


def test_in_bounds_kernels_with_stack_threadgroup_and_simd_memory_pass(sim, rng):
    """Locals whose address is taken, threadgroup arrays, SIMD collectives and atomics are all
    legal accesses: memcheck must not report them."""
    src = r"""
#include <metal_stdlib>
using namespace metal;
static void fill(thread float* dst, float v, int n) { for (int k = 0; k < n; ++k) dst[k] = v + k; }
kernel void mixed(device float* out [[buffer(0)]], const device float* x [[buffer(1)]],
                  device atomic_uint* count [[buffer(2)]], threadgroup float* scratch [[threadgroup(0)]],
                  uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                  uint n [[threads_per_threadgroup]]) {
  float local[4];
  fill(local, x[i], 4);
  scratch[t] = local[3];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = simd_sum(scratch[(t + 1) % n]);
  atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
  out[i] = s;
}
"""
    k = triton_mps.compile_msl(src, "mixed", sim, memcheck=True)
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(64, np.float32)
    count = np.zeros(1, np.uint32)
    k(out, x, count, grid=2, threads=32, threadgroup_memory=[(0, 32 * 4)])
    sim.synchronize()
    shifted_vals = (x + 3).reshape(2, 32).astype(np.float64)
    want = np.repeat(shifted_vals.sum(axis=1), 32)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    assert count[0] == 64


MATRIX = r"""
#include <metal_stdlib>
using namespace metal;
kernel void mat(device float* out [[buffer(0)]], const device float* a [[buffer(1)]],
                constant int& row0 [[buffer(2)]], constant int& out_row0 [[buffer(3)]],
                uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 m, r;
  simdgroup_load(m, a + row0 * 8, 8);
  simdgroup_multiply(r, m, m);
  simdgroup_store(r, out + out_row0 * 8, 8);
  out[64 + lane] = simd_sum(r.thread_elements()[0]);
}
"""


@pytest.mark.parametrize("row0, out_row0, what, call", [
    # rows 1..8 of a 64-float buffer; a lane reads its pair at once
    (1, 0, "out-of-bounds load of 8 bytes", "simdgroup_load"),
    (0, 5, "out-of-bounds store of 4 bytes", "simdgroup_store"),  # rows 5..12 of a 96-float buffer
])
def test_simdgroup_matrix_loads_and_stores_are_checked(sim, rng, row0, out_row0, what, call):
    """simdgroup_load/store address the kernel's buffers and stay checked; the SIMD-group
    exchange behind multiply and simd_sum is the shim's own memory (not instrumented)."""
    k = triton_mps.compile_msl(MATRIX, "mat", sim, memcheck=True)
    a = rng.standard_normal(64).astype(np.float32)
    out = poisoned(96, np.float32)
    k(out, a, 0, 0, grid=1, threads=32)
    sim.synchronize()
    want = a.reshape(8, 8).astype(np.float64) @ a.reshape(8, 8)
    np.testing.assert_allclose(out[:64].reshape(8, 8), want, rtol=1e-5, atol=1e-5)
    assert np.all(np.isfinite(out[64:]))
    with pytest.raises(triton_mps.DispatchError, match=what) as info:
        k(poisoned(96, np.float32), a, row0, out_row0, grid=1, threads=32)
        sim.synchronize()
    # Known gap: the access is inside the shim's simdgroup_load/store, so no MSL line is named.
    assert "buffer(1) 'a'" in str(info.value) if call == "simdgroup_load" else "buffer(0) 'out'" in str(info.value)


def test_memcheck_off_builds_without_checks(sim, rng):
    """memcheck=False is a different build (the opt-out for benchmarks) and still computes right."""
    k = triton_mps.compile_msl(SHIFTED, "shifted", sim, memcheck=False)
    _run_ok(sim, k, rng)


def test_memcheck_env_value_is_validated(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, TRITON_MPS_MEMCHECK="yes")
    code = ("import triton_mps\n"
            f"triton_mps.compile_msl({SHIFTED!r}, 'shifted', triton_mps.get_device('sim'))\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "TRITON_MPS_MEMCHECK must be 0 or 1" in r.stderr, r.stderr


def test_struct_copy_out_of_bounds_is_caught(sim, rng):
    """Aggregate copies become memory intrinsics (__asan_memcpy): both sides are checked."""
    src = r"""
#include <metal_stdlib>
using namespace metal;
struct Row { float v[8]; };
kernel void rows(device Row* out [[buffer(0)]], const device Row* in [[buffer(1)]],
                 constant int& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[int(i) + shift];
}
"""
    # strict=False: the strict check's known false positive on struct copies between address spaces.
    k = triton_mps.compile_msl(src, "rows", sim, memcheck=True, strict=False)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    out = poisoned((4, 8), np.float32)
    k(out, x, 0, grid=1, threads=4)
    sim.synchronize()
    np.testing.assert_array_equal(out, x)
    want = r"out-of-bounds load of 32 bytes past the end of buffer\(1\) 'in'"
    with pytest.raises(triton_mps.DispatchError, match=want):
        k(out, x, 1, grid=1, threads=4)
        sim.synchronize()


def test_triton_kernel_with_a_mask_bug_is_stopped(tmp_path):
    """A Triton kernel whose mask lets one element past the end through: DispatchError through
    kernel[grid](...), naming the MSL line and the Triton line (child process: Triton needs its
    kernel source in a file). The bounds are the tensor's storage (its allocation, as
    compute-sanitizer checks), so the output here owns its storage; a view into a larger tensor
    may be addressed anywhere in that storage."""
    import subprocess
    import sys

    script = tmp_path / "mask_bug.py"
    script.write_text(r'''
import os
os.environ["TRITON_BACKEND"] = "mps"
import torch, triton, triton.language as tl
import triton_mps

@triton.jit
def copy(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(out + offs, v, mask=offs <= n)   # bug: one past the end

x, out = torch.rand(1000), torch.full((1000,), 7.0)
try:
    copy[(4,)](x, out, 1000, BLOCK=256)
    print("NO ERROR")
except triton_mps.DispatchError as e:
    print("ERROR", e)
copy[(4,)](x, out, 999, BLOCK=256)  # in bounds now (stores offs <= 999): the process is still usable
print("USABLE", bool(torch.equal(out[:999], x[:999])))
''')
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), TRITON_MPS_CACHE_DIR=str(tmp_path / "mps"))
    env.pop("TRITON_MPS_MEMCHECK", None)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ERROR kernel 'copy': out-of-bounds store of 4 bytes past the end of buffer(1)" in r.stdout, r.stdout
    assert "byte offset 4000 (element 1000)" in r.stdout, r.stdout
    assert "(mask_bug.py:11)" in r.stdout, r.stdout  # the Triton line of the tl.store
    assert "USABLE True" in r.stdout, r.stdout


_LINES_SCRIPT = r"""
import sys
import numpy as np
import triton_mps
sim = triton_mps.get_device("sim")
k = triton_mps.compile_msl(sys.argv[1], "shifted", sim, memcheck=True)
out, x = np.full(16, 7.0, np.float32), np.arange(16, dtype=np.float32)
print("BUILT")
sys.stdout.flush()
input()  # the parent looks at the cache before any report
try:
    k(out, x, 1, 0, grid=1, threads=16)
    sim.synchronize()
    print("NO ERROR")
except triton_mps.DispatchError as e:
    print("ERROR", e)
k(out, x, 0, 0, grid=1, threads=16)
sim.synchronize()
print("USABLE", bool((out == 2 * x).all()))
"""


def _report_in_child(tmp_path, source, before_report=None):
    """Builds `source` in a child process with its own caches, calls `before_report(sim_cache)`,
    then makes the child report an out-of-bounds store; the child's output."""
    import subprocess
    import sys

    env = dict(os.environ, TRITON_MPS_CACHE_DIR=str(tmp_path / "mps"), TRITON_MPS_SIM_OPT="2")
    p = subprocess.Popen([sys.executable, "-c", _LINES_SCRIPT, source], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "BUILT", p.communicate()
    if before_report:
        before_report(tmp_path / "mps" / "sim")
    out, err = p.communicate("\n", timeout=600)
    assert p.returncode == 0, out + err
    assert "USABLE True" in out, out
    return out


def test_memcheck_builds_get_line_tables_only_when_a_report_needs_them(tmp_path):
    """A memcheck build carries no debug information (-g0: faster builds); the first report
    builds its twin with line tables, whose code is checked to be the library's, and names
    the MSL line from it. Later processes reuse the cached twin."""
    libraries = {}

    def no_twin_yet(cache):
        so = [p for p in cache.glob("*.so") if not p.name.endswith(".lines.so")]
        assert len(so) == 1 and not list(cache.glob("*.lines.so")), sorted(cache.iterdir())
        assert b".debug_line" not in so[0].read_bytes()  # no line tables in the library
        libraries["so"] = so[0]

    out = _report_in_child(tmp_path, SHIFTED, no_twin_yet)
    assert "out-of-bounds store of 4 bytes past the end of buffer(0) 'out'" in out, out
    assert f"line {STORE_LINE}" in out, out
    twin = libraries["so"].with_name(libraries["so"].name[:-3] + ".lines.so")
    assert twin.exists() and b".debug_line" in twin.read_bytes()
    made = twin.stat().st_mtime_ns
    out = _report_in_child(tmp_path, SHIFTED)  # a new process: the cached twin
    assert f"line {STORE_LINE}" in out, out
    assert twin.stat().st_mtime_ns == made


def test_a_twin_with_other_code_gives_no_line(tmp_path):
    """A twin whose code differs from its library's (here: another kernel's, with a valid
    sidecar) is never used to name a line: the report says why the line is unknown."""
    import hashlib

    other = SHIFTED.replace("v * 2.0f", "v * 2.0f + 0.0f * float(i)")
    _report_in_child(tmp_path / "other", other)
    other_twin = next((tmp_path / "other" / "mps" / "sim").glob("*.lines.so"))

    def plant(cache):
        so = next(p for p in cache.glob("*.so") if not p.name.endswith(".lines.so"))
        twin = so.with_name(so.name[:-3] + ".lines.so")
        data = other_twin.read_bytes()
        twin.write_bytes(data)
        (twin.parent / (twin.name + ".meta")).write_text(
            f"tmps-sim-meta-v1\nsize {len(data)}\nsha256 {hashlib.sha256(data).hexdigest()}\n")

    out = _report_in_child(tmp_path, SHIFTED, plant)
    assert "ERROR kernel 'shifted': out-of-bounds store" in out, out
    assert f"line {STORE_LINE}" not in out, out
    assert "at an unknown MSL line (its copy with line tables has other code (section" in out, out
