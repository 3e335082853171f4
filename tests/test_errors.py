"""Every limit and bad input gives a clear exception, and the device stays usable after it."""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

SCALE = r"""
#include <metal_stdlib>
using namespace metal;
struct Params { float alpha; uint n; };
kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < p.n) y[i] = p.alpha * x[i];
}
kernel void axpb(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], constant uint& n [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
  if (i < n) y[i] = a * x[i] + 1.0f;
}
"""


def params_bytes(alpha: float, n: int) -> bytes:
    return np.array([(alpha, n)], dtype=[("alpha", "<f4"), ("n", "<u4")]).tobytes()


def run_scale_ok(dev, rng):
    """A correct launch, to show the device still works after an error."""
    k = triton_mps.compile_msl(SCALE, "scale", dev)
    x = rng.standard_normal(100).astype(np.float32)
    y = poisoned(100, np.float32)
    k(x, y, params_bytes(2.5, 100), grid=4, threads=32)
    dev.synchronize()
    np.testing.assert_allclose(y, 2.5 * x.astype(np.float64), rtol=1e-6)



@pytest.fixture(scope="module", params=["sim", "metal-emu"])
def sim(request):
    """These tests run on the simulator and on the emulated Metal device (issue 11)."""
    if request.param == "metal-emu" and not any(d.is_emulated for d in triton_mps.devices()):
        pytest.skip("built without the emulated Metal device")
    return triton_mps.get_device(request.param)

def test_struct_argument_as_bytes(sim, rng):
    run_scale_ok(sim, rng)


def test_wrong_argument_count(sim, rng):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"axpb.*4.*got 3|takes 4"):
        k(x, x, 1.0, grid=1, threads=8)
    assert sim.pending == 0
    run_scale_ok(sim, rng)


def test_scalar_where_buffer_expected(sim, rng):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'y'.*axpb"):
        k(x, 3, 1.0, 8, grid=1, threads=8)
    run_scale_ok(sim, rng)


def test_wrong_scalar_type_and_range(sim, rng):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    y = poisoned(8, np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'n'.*integer"):
        k(x, y, 1.0, 8.5, grid=1, threads=8)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'n'.*does not fit"):
        k(x, y, 1.0, -1, grid=1, threads=8)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'a'.*number"):
        k(x, y, "one", 8, grid=1, threads=8)
    run_scale_ok(sim, rng)


def test_struct_bytes_of_wrong_size(sim, rng):
    if not sim.is_simulator:
        # Metal pipelines do not know sizeof(struct) (ParamInfo.type_size is 0): a wrong-size
        # struct reaches the kernel unchecked. Known gap (issue 11 notes; Metal reflection could fill it).
        pytest.skip("struct sizes are known to the simulator only")
    k = triton_mps.compile_msl(SCALE, "scale", sim)
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'p'"):
        k(x, x, b"\x00\x00\x80\x3f", grid=1, threads=8)  # 4 bytes for an 8-byte struct
    run_scale_ok(sim, rng)


def test_buffer_too_small_for_constant_struct(sim, rng):
    if not sim.is_simulator:
        pytest.skip("struct sizes are known to the simulator only (see test_struct_bytes_of_wrong_size)")
    k = triton_mps.compile_msl(SCALE, "scale", sim)
    x = rng.standard_normal(8).astype(np.float32)
    tiny = sim.buffer(4)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'p'.*(small|bytes)"):
        k(x, x, tiny, grid=1, threads=8)
    run_scale_ok(sim, rng)


def test_cpu_object_that_is_not_a_buffer(sim, rng):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    with pytest.raises(triton_mps.InvalidArgument):
        k([1.0, 2.0], poisoned(2, np.float32), 1.0, 2, grid=1, threads=2)
    run_scale_ok(sim, rng)


def test_oversized_threadgroup(sim, rng):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(2048).astype(np.float32)
    y = poisoned(2048, np.float32)
    with pytest.raises(triton_mps.LimitExceeded, match=r"axpb.*1024|1024.*axpb"):
        k(x, y, 1.0, 2048, grid=1, threads=2048)
    with pytest.raises(triton_mps.LimitExceeded):
        k(x, y, 1.0, 2048, grid=1, threads=(32, 32, 2))
    run_scale_ok(sim, rng)


def test_threadgroup_memory_limit_dynamic(sim, rng):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void tg(device float* y [[buffer(0)]], threadgroup float* s [[threadgroup(0)]],
               uint i [[thread_index_in_threadgroup]]) {
  s[i] = float(i);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[i] = s[31 - i];
}
"""
    k = triton_mps.compile_msl(src, "tg", sim)
    y = poisoned(32, np.float32)
    with pytest.raises(triton_mps.LimitExceeded, match=r"tg.*(32768|32 KiB)"):
        k(y, grid=1, threads=32, threadgroup_memory=[(0, 40000)])
    k(y, grid=1, threads=32, threadgroup_memory=[(0, 128)])
    sim.synchronize()
    np.testing.assert_array_equal(y, np.arange(31, -1, -1, dtype=np.float32))


def test_threadgroup_memory_limit_static(sim, rng):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void big(device float* y [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {
  threadgroup float s[9000];
  s[i] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[i] = s[i];
}
"""
    k = triton_mps.compile_msl(src, "big", sim)
    y = poisoned(32, np.float32)
    expected = (triton_mps.LimitExceeded, triton_mps.DispatchError)
    with pytest.raises(expected, match=r"big.*(32768|32 KiB|threadgroup memory)"):
        k(y, grid=1, threads=32)
        sim.synchronize()
    run_scale_ok(sim, rng)


def test_too_many_buffer_bindings_rejected_at_compile(sim):
    params = ",\n".join(f"device float* b{i} [[buffer({i})]]" for i in range(32))
    src = f"kernel void wide({params}, uint i [[thread_position_in_grid]]) {{ b0[i] = 1.0f; }}"
    with pytest.raises(triton_mps.CompileError, match=r"31"):
        triton_mps.compile_msl(src, "wide", sim)


def test_malformed_msl_reports_line(sim):
    src = "#include <metal_stdlib>\nusing namespace metal;\n\nkernel void bad(device float* y [[buffer(0)]],\n" \
          "                uint i [[thread_position_in_grid]]) {\n  y[i] = undefined_name + 1.0f;\n}\n"
    with pytest.raises(triton_mps.CompileError, match=r":6:"):
        triton_mps.compile_msl(src, "bad", sim)


def test_missing_entry_point(sim):
    with pytest.raises(triton_mps.CompileError, match=r"nosuch.*(axpb|scale)|(axpb|scale).*nosuch"):
        triton_mps.compile_msl(SCALE, "nosuch", sim)


def test_strict_check_rejects_write_to_constant(sim):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void w(constant float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) { c[i] = 1.0f; }
"""
    with pytest.raises(triton_mps.CompileError):
        triton_mps.compile_msl(src, "w", sim)


def test_strict_check_rejects_double(sim):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void d(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  double t = 1.0; y[i] = float(t);
}
"""
    with pytest.raises(triton_mps.CompileError, match=r"double"):
        triton_mps.compile_msl(src, "d", sim)


def test_strict_check_rejects_address_space_mixing(sim):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void mix(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float local = 1.0f;
  device float* p = &local;
  y[i] = *p;
}
"""
    with pytest.raises(triton_mps.CompileError):
        triton_mps.compile_msl(src, "mix", sim)


def test_divergent_barrier_is_reported_with_line(sim, rng):
    src = (
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "kernel void div(device float* y [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {\n"
        "  if (i < 16) {\n"
        "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"  # line 5
        "  }\n"
        "  y[i] = 1.0f;\n"
        "}\n"
    )
    k = triton_mps.compile_msl(src, "div", sim)
    y = poisoned(64, np.float32)
    with pytest.raises(triton_mps.DispatchError, match=r"div.*barrier.*5|barrier.*div.*5"):
        k(y, grid=1, threads=64)
        sim.synchronize()
    run_scale_ok(sim, rng)


def test_pool_usable_after_errors(sim, rng):
    before = sim.pool_stats()
    for _ in range(3):
        with pytest.raises(triton_mps.InvalidArgument):
            triton_mps.compile_msl(SCALE, "axpb", sim)(1, 2, grid=1, threads=1)
    b = sim.buffer(1 << 16)
    assert b.nbytes == 1 << 16
    del b
    after = sim.pool_stats()
    assert after["active_bytes"] == before["active_bytes"]
    run_scale_ok(sim, rng)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_wrong_element_type_array_is_refused(sim, rng, dtype):
    """A float64 (or int32, or half) array where the kernel reads float* would be reinterpreted
    silently; it is refused, naming the parameter and both types."""
    k = triton_mps.compile_msl(SCALE, "scale", sim)
    x = rng.standard_normal(16).astype(dtype)
    y = poisoned(16, np.float32)
    want = rf"parameter 'x' is float\* but the array holds {np.dtype(dtype).name}"
    with pytest.raises(triton_mps.InvalidArgument, match=want):
        k(x, y, params_bytes(1.0, 16), grid=1, threads=16)
    run_scale_ok(sim, rng)


def test_integer_signedness_is_not_a_type_error(sim):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void inc(device int* v [[buffer(0)]], uint i [[thread_position_in_grid]]) { v[i] += 1; }
"""
    k = triton_mps.compile_msl(src, "inc", sim)
    v = np.arange(8, dtype=np.uint32)
    k(v, grid=1, threads=8)
    sim.synchronize()
    np.testing.assert_array_equal(v, np.arange(1, 9))
