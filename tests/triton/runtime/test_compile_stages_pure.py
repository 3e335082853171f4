"""The compile stages (make_ttir -> make_ttgir -> make_msl -> make_metal) touch no device: text
in, text or bytes out, as Triton's own backends. The pipeline's build starts from Triton's
compilation listener at the end of triton.compile (backend/device.py prebuild_after_compile,
installed by backend/driver.py), on every path that compiles: the JIT (warmup, first call,
autotuning) and direct triton.compile calls (Inductor's precompile and compile workers)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from tmps_testing import fresh_scale, pipeline_cache_stats
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import ASTSource
from triton_mps.backend import device, prebuild, registration

TARGET = GPUTarget("mps", 9, 32)  # no device behind it: triton.compile asks no driver for one


@triton.jit
def add_scaled(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE + 1.0, mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "SCALE": "constexpr", "BLOCK": "constexpr"}


def _source(scale: float) -> ASTSource:
    return ASTSource(add_scaled, SIGNATURE, {"SCALE": scale, "BLOCK": 128})


def _no_device(monkeypatch) -> list[str]:
    """Every way to a device or a pipeline build raises (and is recorded)."""
    # A prebuild queued by an earlier test, still running on a build thread, would call the
    # patched functions below and be counted against the stage under test (seen in CI).
    prebuild.wait_idle()
    touched: list[str] = []

    def refuse(what):
        def raising(*args, **kwargs):
            touched.append(what)
            raise AssertionError(f"a compile stage called {what}")
        return raising

    for name in ("_device", "_devices", "_default_index", "build_pipeline", "build_at_launch", "prebuild_pipeline",
                 "pipeline_request"):
        monkeypatch.setattr(device, name, refuse(f"device.{name}"))
    monkeypatch.setattr(prebuild, "start", refuse("prebuild.start"))
    for name in ("devices", "default_device", "get_device"):
        monkeypatch.setattr(triton_mps.runtime, name, refuse(f"runtime.{name}"))
    return touched


@pytest.fixture
def starts(monkeypatch):
    """The prebuilds queued (their keys), counted where device.prebuild_pipeline queues them."""
    queued: list[prebuild.Key] = []
    real = prebuild.start

    def start(key, build):
        queued.append(key)
        return real(key, build)

    monkeypatch.setattr(prebuild, "start", start)
    return queued


def test_the_listener_is_installed():
    listener = knobs.compilation.listener
    assert listener is device.prebuild_after_compile or \
        getattr(listener, "tmps_listener", None) is device.prebuild_after_compile


def test_the_stages_touch_no_device(monkeypatch, request):
    touched = _no_device(monkeypatch)
    with knobs.compilation.scope():
        knobs.compilation.listener = None  # the stages alone: what starts builds is off
        knobs.compilation.always_compile = True  # every stage runs
        kernel = triton.compile(_source(fresh_scale(request, 2.0)), target=TARGET)
    assert touched == []
    msl = kernel.asm["metal"].decode("utf-8")
    assert kernel.name == "add_scaled" and "kernel void add_scaled" in msl
    assert kernel.asm["msl"] and kernel.asm["ttgir"]


def test_the_stages_alone_run_without_the_device_module(monkeypatch, request):
    # Calling the stage functions directly, as Triton's compile loop does.
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    touched = _no_device(monkeypatch)
    backend = make_backend(TARGET)
    options = backend.parse_options({})
    stages: dict = {}
    backend.add_stages(stages, options, _source(1.0).language)
    assert list(stages) == ["ttir", "ttgir", "msl", "metal"]
    src = _source(fresh_scale(request, 2.0))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(TARGET, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                         context)
    metadata = {"hash": "0" * 64, "target": TARGET, **options.__dict__}
    for stage in stages.values():
        module = stage(module, metadata)
    assert isinstance(module, bytes) and b"kernel void add_scaled" in module
    assert touched == []


def test_a_compile_starts_the_build_and_the_launch_uses_it(request, starts):
    if prebuild.workers() == 0:
        pytest.skip("TRITON_MPS_PREBUILD=0")
    scale = fresh_scale(request, 2.0)
    x = torch.randn(1000)
    out = torch.full_like(x, float("nan"))
    prebuild.wait_idle()  # builds queued by earlier tests would count here
    before = pipeline_cache_stats()
    compiled = add_scaled.warmup(x, out, x.numel(), SCALE=scale, BLOCK=128, grid=(8,))  # compiles, does not load
    msl = compiled.asm["metal"].decode("utf-8")
    assert starts == [prebuild.key_of(msl, compiled.name)]  # from the listener, at the end of the compile
    prebuild.wait_idle()
    built = pipeline_cache_stats()
    assert built["misses"] == before["misses"] + 1, (before, built)  # built in the background
    add_scaled[(8,)](x, out, x.numel(), SCALE=scale, BLOCK=128)
    after = pipeline_cache_stats()
    assert after["misses"] == built["misses"], "the launch built the pipeline again"
    torch.testing.assert_close(out, (x.double() * scale + 1.0).float())
    assert len(starts) == 1


def test_a_direct_compile_starts_the_build_as_inductor_does(request, starts):
    # Inductor's precompile calls triton.compile itself (no JITFunction, no jit_post_compile_hook).
    if prebuild.workers() == 0:
        pytest.skip("TRITON_MPS_PREBUILD=0")
    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        kernel = triton.compile(_source(fresh_scale(request, 2.0)), target=TARGET)
    assert starts == [prebuild.key_of(kernel.asm["metal"].decode("utf-8"), kernel.name)]
    prebuild.wait_idle()


def test_an_inductor_compile_worker_builds_at_once(monkeypatch, request, starts):
    # In a compile worker the simulator builds before triton.compile returns (into its disk cache).
    if prebuild.workers() == 0:
        pytest.skip("TRITON_MPS_PREBUILD=0")
    if not triton_mps.get_device(None).is_simulator:
        pytest.skip("the current device is not the simulator")
    builds: list[tuple[str, bool]] = []
    real = device.build_pipeline

    def build_pipeline(dev, source, name, request=None, *, background=False):
        builds.append((name, background))
        return real(dev, source, name, request, background=background)

    monkeypatch.setattr(device, "build_pipeline", build_pipeline)
    monkeypatch.setattr(device, "_in_inductor_compile_worker", lambda: True)
    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        triton.compile(_source(fresh_scale(request, 2.0)), target=TARGET)
    assert builds == [("add_scaled", True)] and starts == []


def test_inductors_cpu_target_starts_the_build_too(request, starts):
    # Inductor's cpu_backend="triton" compiles for GPUTarget("cpu", ...) on our backend
    # (inductor_cpu.py): the listener knows our compiles by their options, not their target.
    from triton_mps.backend.inductor_cpu import claims_cpu_target

    if prebuild.workers() == 0 or not claims_cpu_target():
        pytest.skip("TRITON_MPS_PREBUILD=0, or the cpu alias is not ours")
    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        kernel = triton.compile(_source(fresh_scale(request, 2.0)), target=GPUTarget("cpu", 0, 32))
    assert starts == [prebuild.key_of(kernel.asm["metal"].decode("utf-8"), kernel.name)]
    prebuild.wait_idle()


def test_a_cache_hit_or_another_backend_starts_nothing(monkeypatch, tmp_path):
    touched = _no_device(monkeypatch)
    metal = tmp_path / "k.metal"
    metal.write_text("kernel void k() {}")
    group = {"k.metal": str(metal), "k.json": str(tmp_path / "k.json")}
    ours = {"target": TARGET, "backend_name": "mps", "name": "k"}
    device.prebuild_after_compile(src=None, metadata=ours, metadata_group=group, times=None, cache_hit=True)
    device.prebuild_after_compile(src=None, metadata={"target": GPUTarget("cuda", 90, 32), "backend_name": "cuda",
                                                      "name": "k"}, metadata_group=group, times=None, cache_hit=False)
    assert touched == []
    with pytest.raises(AssertionError, match="prebuild_pipeline"):  # a compile of ours does start one
        device.prebuild_after_compile(src=None, metadata=ours, metadata_group=group, times=None, cache_hit=False)


def test_a_listener_set_before_is_still_called():
    calls: list[str] = []

    def theirs(**kwargs):
        calls.append("theirs")

    def ours(**kwargs):
        calls.append("ours")

    with knobs.compilation.scope():
        knobs.compilation.listener = theirs
        registration.listen_to_compiles(ours)
        registration.listen_to_compiles(ours)  # idempotent
        knobs.compilation.listener(src=None, metadata={}, metadata_group={}, times=None, cache_hit=False)
    assert calls == ["ours", "theirs"]
