"""The `mps` plugin as Triton sees it: discovery, activation, options, pipeline, cache key."""

from __future__ import annotations

import dataclasses
import shutil
import sys

import pytest
import triton
import triton.language as tl
import triton_mps
from triton.backends import backends
from triton.backends.compiler import GPUTarget
from triton_mps.backend import compiler as mps_compiler
from triton_mps.backend import driver as mps_driver
from triton_mps.backend.compiler import MPSBackend, MPSOptions
from triton_mps.backend.driver import MPSDriver


def backend() -> MPSBackend:
    return MPSBackend(GPUTarget("mps", 9, 32))


def test_discovered_by_import_triton():
    assert "mps" in backends
    assert backends["mps"].compiler is MPSBackend
    assert backends["mps"].driver is MPSDriver


def test_active_driver_is_ours(mps_driver):
    from triton.runtime.driver import driver

    assert isinstance(driver.active, MPSDriver)
    target = driver.active.get_current_target()
    assert target.backend == "mps" and target.warp_size == 32 and isinstance(target.arch, int)
    assert MPSBackend.supports_target(target)
    assert not MPSBackend.supports_target(GPUTarget("cuda", 90, 32))


@pytest.mark.parametrize(
    "env, platform, expected",
    [
        (None, "linux", False),  # never take over a Linux (CUDA/ROCm) machine unasked
        (None, "win32", False),
        ("mps", "linux", True),
        ("metal", "linux", True),
        ("MPS", "linux", True),
        ("cuda", "linux", False),
        ("cuda", "darwin", False),  # someone asked for another backend
    ],
)
def test_is_active_rules(monkeypatch, env, platform, expected):
    if env is None:
        monkeypatch.delenv("TRITON_BACKEND", raising=False)
    else:
        monkeypatch.setenv("TRITON_BACKEND", env)
    monkeypatch.setattr(sys, "platform", platform)
    assert MPSDriver.is_active() is expected


def test_is_active_on_mac_depends_on_a_metal_device(monkeypatch):
    monkeypatch.delenv("TRITON_BACKEND", raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    has_metal = any(not d.is_simulator for d in mps_driver._devices())
    assert MPSDriver.is_active() is has_metal


def test_options_defaults():
    o = backend().parse_options({})
    assert isinstance(o, MPSOptions)
    assert (o.num_warps, o.num_stages, o.num_ctas, o.arch) == (4, 1, 1, "apple9")
    assert set(o.supported_fp8_dtypes) == {"fp8e5", "fp8e5b16", "fp8e4nv", "fp8e4b8", "fp8e4b15"}  # emulated
    assert o.default_dot_input_precision == "ieee"
    assert set(o.allowed_dot_input_precisions) == {"ieee", "tf32", "tf32x3", "bf16x3", "bf16x6"}
    assert o.max_num_imprecise_acc_default == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.num_warps = 8


def test_options_accept_and_ignore_foreign_knobs():
    foreign = dict(maxnreg=128, waves_per_eu=2, matrix_instr_nonkdim=16, kpack=2, launch_cooperative_grid=True,
                   launch_pdl=True, enable_fp_fusion=False, schedule_hint="x", grf_mode="large", num_stages=5,
                   sanitize_overflow=False, debug=True, BLOCK_SIZE=1024, some_kernel_argument=3)
    o = backend().parse_options(foreign)
    assert o.num_stages == 5 and o.maxnreg == 128 and o.debug is True and o.enable_fp_fusion is False
    assert not hasattr(o, "BLOCK_SIZE")  # kernel arguments are not options
    # Target facts are not the caller's to change.
    o2 = backend().parse_options({"supported_fp8_dtypes": ("fp8e5",), "warp_size": 64})
    assert o2.supported_fp8_dtypes == o.supported_fp8_dtypes and o2.warp_size == 32


def test_num_warps_not_power_of_two_is_also_an_assertion_error():
    """Triton's backends assert it; upstream's test_num_warps_pow2 expects AssertionError."""
    with pytest.raises(AssertionError, match="must be a power of 2"):
        backend().parse_options({"num_warps": 3})


@pytest.mark.parametrize("bad", [{"num_ctas": 2}, {"num_warps": 3}, {"num_warps": 64}, {"num_warps": 0}])
def test_options_reject(bad):
    with pytest.raises(ValueError) as e:
        backend().parse_options(bad)
    key = next(iter(bad))
    assert key in str(e.value)


def test_options_hash_is_stable_and_sensitive():
    b = backend()
    assert b.parse_options({}).hash() == b.parse_options({}).hash()
    assert b.parse_options({}).hash() != b.parse_options({"num_warps": 8}).hash()
    assert b.parse_options({}).hash() != b.parse_options({"enable_fp_fusion": False}).hash()


def test_pipeline_is_one_table_of_named_stages():
    stages = {}
    b = backend()
    b.add_stages(stages, b.parse_options({}), triton.backends.compiler.Language.TRITON)
    assert list(stages) == ["ttir", "ttgir", "msl", "metal"] == list(mps_compiler.PIPELINE)
    ttgir = [n for n, add in mps_compiler.TTGIR_PASSES if add is not None]
    assert ttgir[0] == "convert_to_ttgpuir"
    for not_for_metal in ("accelerate_matmul", "pipeline"):
        assert not_for_metal not in ttgir
    text = mps_compiler.describe_pipeline()
    assert "coalesce" in text and "compile_ttgir" in text
    assert b.binary_ext == "metal"


def test_backend_codegen_and_module_map():
    b = backend()
    fns = b.get_codegen_implementation(b.parse_options({}))
    assert fns["min_dot_size"](None, None) == (1, 1, 1)
    # libdevice (generic, CUDA and HIP spellings) resolves to our Metal mapping.
    ours = b.get_module_map()["triton.language.extra.libdevice"]
    assert ours.__name__ == "triton_mps.language.libdevice"


def test_hash_covers_dot_path_switch(monkeypatch):
    b = mps_compiler.MPSBackend(GPUTarget("mps", 9, 32))
    monkeypatch.setenv("TRITON_MPS_DOT", "fma")
    fma = b.hash()
    monkeypatch.setenv("TRITON_MPS_DOT", "simdgroup")
    assert b.hash() != fma


def test_hash_covers_compiler_sources(monkeypatch, tmp_path):
    root = tmp_path / "triton_mps"
    shutil.copytree(mps_compiler.PACKAGE_DIR / "compiler", root / "compiler")
    shutil.copytree(mps_compiler.PACKAGE_DIR / "backend", root / "backend")
    shutil.copytree(mps_compiler.PACKAGE_DIR / "language", root / "language")
    monkeypatch.setattr(mps_compiler, "PACKAGE_DIR", root)
    b = backend()
    h1 = b.hash()
    assert h1 == b.hash()
    (root / "compiler" / "abi.py").write_text((root / "compiler" / "abi.py").read_text() + "\n# changed\n")
    mps_compiler.sources_digest.cache_clear()
    h2 = b.hash()
    assert h2 != h1
    (root / "compiler" / "new_lowering.py").write_text("X = 1\n")  # a new file counts too
    mps_compiler.sources_digest.cache_clear()
    h3 = b.hash()
    assert h3 != h2
    lib = root / "language" / "libdevice.py"  # the libdevice mapping changes generated code too
    lib.write_text(lib.read_text() + "\n# changed\n")
    mps_compiler.sources_digest.cache_clear()
    assert b.hash() != h3
    (root / "backend" / "driver.py").write_text("# edited\n")
    mps_compiler.sources_digest.cache_clear()
    assert len({h1, h2, b.hash()}) == 3
    mps_compiler.sources_digest.cache_clear()


def test_hash_changes_with_debug_dumps(monkeypatch):
    b = backend()
    monkeypatch.delenv("TRITON_MPS_DEBUG", raising=False)
    monkeypatch.delenv("TRITON_METAL_DEBUG", raising=False)
    plain = b.hash()
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    assert b.hash() != plain


def test_device_properties(mps_driver):
    props = mps_driver.utils.get_device_properties(mps_driver.get_current_device())
    for key in ("max_shared_mem", "multiprocessor_count", "max_num_regs", "warpSize", "sm_clock_rate",
                "mem_clock_rate", "mem_bus_width"):
        assert isinstance(props[key], int) and props[key] > 0, key
    assert props["warpSize"] == 32
    assert props["max_shared_mem"] == 32768
    if props["is_simulator"]:
        import os

        assert props["multiprocessor_count"] == os.cpu_count()


@triton.jit
def _fill(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_occupancy_arithmetic_of_launch_scripts(mps_driver, num_warps):
    """Triton launch scripts size persistent grids with NUM_REGS // (n_regs * WARP_SIZE *
    num_warps): n_regs is a documented estimate from the pipeline's thread limit, never 0."""
    import torch

    props = mps_driver.utils.get_device_properties(mps_driver.get_current_device())
    x = torch.zeros(128, device=mps_driver.get_active_torch_device())
    k = _fill[(1,)](x, BLOCK=128, num_warps=num_warps)
    k._init_handles()
    assert k.n_regs > 0 and k.n_spills == 0
    occupancy = props["max_num_regs"] // (k.n_regs * props["warpSize"] * num_warps)
    # The threadgroups of num_warps SIMD-groups that fit the pipeline's thread limit.
    assert occupancy == k.n_max_threads // (props["warpSize"] * num_warps) >= 1


def test_driver_basics(mps_driver):
    import torch

    assert mps_driver.get_current_stream(mps_driver.get_current_device()) == 0
    dev = mps_driver.get_active_torch_device()
    host = mps_driver.config["is_simulator"] or mps_driver.config["is_emulated"]
    assert dev.type == ("cpu" if host else "mps")
    assert mps_driver.map_python_to_cpp_type("*fp16") == "device half*"
    assert mps_driver.map_python_to_cpp_type("i64") == "long"
    pool = mps_driver.memory_pool()
    assert {"current_allocated", "cached", "max_cached_bytes"} <= set(pool)
    mps_driver.empty_cache()
    with pytest.raises(triton_mps.InvalidArgument, match="out of range"):
        mps_driver.set_current_device(99)
    cache = mps_driver.get_empty_cache_for_benchmark()
    assert isinstance(cache, torch.Tensor)
    mps_driver.clear_cache(cache)


def test_device_interface_events(mps_driver):
    import time

    di = mps_driver.get_device_interface()
    start, end = di.Event(enable_timing=True), di.Event(enable_timing=True)
    start.record()
    time.sleep(0.01)
    end.record()
    di.synchronize()
    assert 9 <= start.elapsed_time(end) < 1000  # milliseconds, host wall-clock
