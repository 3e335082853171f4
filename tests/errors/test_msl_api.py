"""Bad input through the direct Metal API (compile_msl, Kernel calls): every limit and bad input
gives a clear exception, and the device stays usable after it. Tests marked @bad_input are rows
of docs/errors.md (tests/bad_input.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton_mps
from bad_input import bad_input
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


@bad_input("missing or extra arguments (Metal API)", given="3 or 5 arguments for a kernel with 4 buffers",
           raises="triton_mps.InvalidArgument", says="kernel 'axpb' takes 4 buffer arguments (x, y, a, n), got")
def test_wrong_argument_count(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    with bad.expect():
        k(x, x, 1.0, grid=1, threads=8)
    with bad.expect():
        k(x, x, 1.0, 8, 9, grid=1, threads=8)
    assert sim.pending == 0
    run_scale_ok(sim, rng)


@bad_input("scalar where a buffer is expected", given="an int for `device float* y`",
           raises="triton_mps.InvalidArgument",
           says="parameter 'y' (float) of kernel 'axpb' is a device buffer; got int")
def test_scalar_where_buffer_expected(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    with bad.expect():
        k(x, 3, 1.0, 8, grid=1, threads=8)
    run_scale_ok(sim, rng)


@bad_input("scalar of the wrong type or range", given="8.5 or -1 for `constant uint& n`, a str for a float",
           raises="triton_mps.InvalidArgument", says="does not fit")
def test_wrong_scalar_type_and_range(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(8).astype(np.float32)
    y = poisoned(8, np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'n'.*integer"):
        k(x, y, 1.0, 8.5, grid=1, threads=8)
    with bad.expect():
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


@bad_input("list or None as a buffer (Metal API)", given="[1.0, 2.0] or None for `device const float* x`",
           raises="triton_mps.InvalidArgument", says="is a device buffer; got")
def test_cpu_object_that_is_not_a_buffer(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    with bad.expect() as info:
        k([1.0, 2.0], poisoned(2, np.float32), 1.0, 2, grid=1, threads=2)
    assert "got list (pass a triton_mps buffer, numpy array or tensor)" in str(info.value)
    with bad.expect() as info:
        k(None, poisoned(2, np.float32), 1.0, 2, grid=1, threads=2)
    assert "got NoneType" in str(info.value)
    run_scale_ok(sim, rng)


@bad_input("non-contiguous array (Metal API)", given="x[::2] or a torch column view for `device float*`",
           raises="triton_mps.InvalidArgument", says="is a non-contiguous array")
def test_non_contiguous_array(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    y = poisoned(8, np.float32)
    with bad.expect() as info:
        k(rng.standard_normal(16).astype(np.float32)[::2], y, 1.0, 8, grid=1, threads=8)
    assert "pass np.ascontiguousarray(a)" in str(info.value)
    with bad.expect():
        k(torch.randn(8, 2)[:, 0], y, 1.0, 8, grid=1, threads=8)
    run_scale_ok(sim, rng)


@bad_input("zero-size array (Metal API)", given="np.empty(0) read by a kernel",
           raises="triton_mps.DispatchError", says="out-of-bounds load of 4 bytes past the end of buffer(0)")
def test_zero_size_array(sim, rng, bad):
    if not sim.is_simulator:
        # Metal's shader validation (TRITON_MPS_METAL_VALIDATION=1, tests/metal/test_metal_validation.py)
        # checks Metal buffers, not arguments: the Metal buffer bound for an empty array is larger.
        pytest.skip("exact per-argument bounds are the simulator's memcheck")
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    empty = np.empty(0, np.float32)
    k(empty, np.empty(0, np.float32), 1.0, 0, grid=1, threads=8)  # n = 0: nothing read, fine
    sim.synchronize()
    with bad.expect():
        k(empty, poisoned(8, np.float32), 1.0, 8, grid=1, threads=8)
        sim.synchronize()
    run_scale_ok(sim, rng)


@bad_input("tensor on an unsupported device (Metal API)", given="a torch 'meta' tensor",
           raises="triton_mps.InvalidArgument", says="is a tensor on device 'meta'; the")
def test_meta_tensor(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    with bad.expect():
        k(torch.empty(8, device="meta"), poisoned(8, np.float32), 1.0, 8, grid=1, threads=8)
    run_scale_ok(sim, rng)


@bad_input("negative or zero launch sizes (Metal API)", given="grid=-1, threads=0",
           raises="triton_mps.InvalidArgument", says="must be between")
def test_bad_launch_sizes(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x, y = rng.standard_normal(8).astype(np.float32), poisoned(8, np.float32)
    with bad.expect() as info:
        k(x, y, 1.0, 8, grid=-1, threads=8)
    assert "grid must be between 0 and 2**32-1" in str(info.value)
    with bad.expect() as info:
        k(x, y, 1.0, 8, grid=1, threads=0)
    assert "threads must be between 1 and 2**32-1" in str(info.value)
    run_scale_ok(sim, rng)


def test_launch_sizes_are_checked_once_in_the_core(sim, rng):
    # runtime.py only converts sizes to three uint32s; the core's build_dispatch (csrc/launcher.cpp)
    # refuses a zero threadgroup dimension, for every caller (the Triton launcher below too).
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x, y = rng.standard_normal(8).astype(np.float32), poisoned(8, np.float32)
    with pytest.raises(triton_mps.InvalidArgument,
                       match=re.escape("kernel 'axpb': threads must be between 1 and 2**32-1 in each dimension, "
                                       "got (8, 0, 1)")):
        k(x, y, 1.0, 8, grid=1, threads=(8, 0))
    with pytest.raises(triton_mps.InvalidArgument,
                       match=re.escape("threads must be between 1 and 2**32-1 in each dimension, got -1")):
        k(x, y, 1.0, 8, grid=1, threads=-1)  # no uint32: refused while converting
    run_scale_ok(sim, rng)


def test_triton_launcher_zero_threads_are_refused_at_launch(sim, rng):
    # The Triton launcher (csrc/python/triton_launch.cpp) keeps no check of its own.
    from triton_mps import _core

    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    specs = [("pointer", "x", "float"), ("pointer", "y", "float"), ("scalar", "a", "float"), ("scalar", "n", "uint")]
    def fallback(*_):
        raise AssertionError("torch tensors need no fallback")

    launcher = _core.TritonLauncher(kernel="axpb", specs=specs, threads=0, pack_scalars_at=-1, fallback=fallback)
    function = _core.TritonFunction(sim, k.pipeline)
    x, y = torch.ones(8), torch.zeros(8)
    with pytest.raises(triton_mps.InvalidArgument, match=re.escape("kernel 'axpb': threads must be between 1")):
        launcher(1, 1, 1, None, function, None, None, None, None, x, y, 1.0, 8)
    assert not y.any()
    run_scale_ok(sim, rng)


def test_pipeline_of_another_device_is_refused(rng):
    if not any(d.is_emulated for d in triton_mps.devices()):
        pytest.skip("built without the emulated Metal device")
    sim, emu = triton_mps.get_device("sim"), triton_mps.get_device("metal-emu")
    x, y = rng.standard_normal(8).astype(np.float32), poisoned(8, np.float32)
    on_sim = triton_mps.compile_msl(SCALE, "axpb", sim)
    with pytest.raises(triton_mps.InvalidArgument, match="kernel 'axpb': pipeline was not built by a Metal device"):
        triton_mps.Kernel(on_sim.pipeline, emu)(x, y, 1.0, 8, grid=1, threads=8)
    on_emu = triton_mps.compile_msl(SCALE, "axpb", emu)
    with pytest.raises(triton_mps.InvalidArgument, match="not built by the simulator device"):
        triton_mps.Kernel(on_emu.pipeline, sim)(x, y, 1.0, 8, grid=1, threads=8)
    run_scale_ok(emu, rng)
    run_scale_ok(sim, rng)


@bad_input("threads per threadgroup over 1024", given="threads=2048 or (32, 32, 2)",
           raises="triton_mps.LimitExceeded", says="1024")
def test_oversized_threadgroup(sim, rng, bad):
    k = triton_mps.compile_msl(SCALE, "axpb", sim)
    x = rng.standard_normal(2048).astype(np.float32)
    y = poisoned(2048, np.float32)
    with bad.expect():
        k(x, y, 1.0, 2048, grid=1, threads=2048)
    with pytest.raises(triton_mps.LimitExceeded):
        k(x, y, 1.0, 2048, grid=1, threads=(32, 32, 2))
    run_scale_ok(sim, rng)


@bad_input("threadgroup memory over 32 KiB (Metal API)", given="threadgroup_memory=[(0, 40000)]",
           raises="triton_mps.LimitExceeded", says="32768")
def test_threadgroup_memory_limit_dynamic(sim, rng, bad):
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
    with bad.expect() as info:
        k(y, grid=1, threads=32, threadgroup_memory=[(0, 40000)])
    assert "tg" in str(info.value)
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


@bad_input("more than 31 buffer bindings", given="a kernel with 32 buffer parameters",
           raises="triton_mps.CompileError", says="31")
def test_too_many_buffer_bindings_rejected_at_compile(sim, bad):
    params = ",\n".join(f"device float* b{i} [[buffer({i})]]" for i in range(32))
    src = f"kernel void wide({params}, uint i [[thread_position_in_grid]]) {{ b0[i] = 1.0f; }}"
    with bad.expect():
        triton_mps.compile_msl(src, "wide", sim)


@bad_input("MSL syntax errors (Metal API)", given="an undeclared name on line 6; a missing ';'",
           raises="triton_mps.CompileError", says="Metal would reject this kernel:")
def test_malformed_msl_reports_line(sim, bad):
    src = "#include <metal_stdlib>\nusing namespace metal;\n\nkernel void bad(device float* y [[buffer(0)]],\n" \
          "                uint i [[thread_position_in_grid]]) {\n  y[i] = undefined_name + 1.0f;\n}\n"
    with bad.expect() as info:
        triton_mps.compile_msl(src, "bad", sim)
    assert ":6:" in str(info.value) and "undefined_name" in str(info.value)
    with bad.expect() as info:
        triton_mps.compile_msl(src.replace("undefined_name + 1.0f;", "1.0f"), "bad", sim)
    assert "expected ';'" in str(info.value)


@bad_input("missing entry point", given="compile_msl(source, 'nosuch')",
           raises="triton_mps.CompileError", says="'nosuch'")
def test_missing_entry_point(sim, bad):
    with bad.expect() as info:
        triton_mps.compile_msl(SCALE, "nosuch", sim)
    assert "scale, axpb" in str(info.value)  # names the kernels there are


def test_strict_check_rejects_write_to_constant(sim):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void w(constant float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) { c[i] = 1.0f; }
"""
    with pytest.raises(triton_mps.CompileError):
        triton_mps.compile_msl(src, "w", sim)


@bad_input("double (Metal API)", given="`double t = 1.0;` in a kernel",
           raises="triton_mps.CompileError", says="'double' is not supported in Metal")
def test_strict_check_rejects_double(sim, bad):
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void d(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  double t = 1.0; y[i] = float(t);
}
"""
    with bad.expect():
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


@bad_input("divergent barrier", given="threadgroup_barrier inside `if (i < 16)`",
           raises="triton_mps.DispatchError", says="barrier")
def test_divergent_barrier_is_reported_with_line(sim, rng, bad):
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
    with bad.expect() as info:
        k(y, grid=1, threads=64)
        sim.synchronize()
    assert "div" in str(info.value) and "5" in str(info.value)
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
@bad_input("wrong element type (Metal API)", given="float64, int32 or float16 numpy arrays for `device const float*`",
           raises="triton_mps.InvalidArgument", says="pass an array of the kernel's element type (e.g. .astype(...))")
def test_wrong_element_type_array_is_refused(sim, rng, dtype, bad):
    """A float64 (or int32, or half) array where the kernel reads float* would be reinterpreted
    silently; it is refused, naming the parameter and both types."""
    k = triton_mps.compile_msl(SCALE, "scale", sim)
    x = rng.standard_normal(16).astype(dtype)
    y = poisoned(16, np.float32)
    want = rf"parameter 'x' is float\* but the array holds {np.dtype(dtype).name}"
    with bad.expect() as info:
        k(x, y, params_bytes(1.0, 16), grid=1, threads=16)
    assert re.search(want, str(info.value))
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


@pytest.mark.parametrize("name", ["main", "tmps_sim_kernels"])
@bad_input("reserved kernel names (Metal API)", given="a kernel named `main` or with the simulator's `tmps_` prefix",
           raises="triton_mps.CompileError", says="is reserved")
def test_reserved_kernel_name(sim, rng, name, bad):
    src = f"kernel void {name}(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ y[i] = 1.0f; }}"
    with bad.expect() as info:
        triton_mps.compile_msl(src, name, sim)
    assert f"'{name}'" in str(info.value) and "rename" in str(info.value)
    run_scale_ok(sim, rng)
