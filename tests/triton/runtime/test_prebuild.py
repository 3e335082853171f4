"""Pipelines built in the background between Triton's compile and the first launch
(backend/prebuild.py): the build happens once, before the launch; errors still reach the launch;
TRITON_MPS_PREBUILD=0 turns it off; fork and exit leave nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl
from tmps_testing import fresh_scale, pipeline_cache_stats
from triton_mps.backend import prebuild


@triton.jit
def scaled_copy(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def test_a_compiled_kernel_is_built_before_its_first_launch(request):
    if prebuild.workers() == 0:
        pytest.skip("TRITON_MPS_PREBUILD=0")
    scale = fresh_scale(request, 1.0)
    x = torch.randn(1000)
    out = torch.full_like(x, float("nan"))
    prebuild.wait_idle()  # builds queued by earlier tests would count here
    before = pipeline_cache_stats()
    scaled_copy.warmup(x, out, x.numel(), SCALE=scale, BLOCK=256, grid=(4,))  # compiles, does not load
    prebuild.wait_idle()
    built = pipeline_cache_stats()
    assert built["misses"] == before["misses"] + 1, (before, built)  # built in the background
    scaled_copy[(4,)](x, out, x.numel(), SCALE=scale, BLOCK=256)
    after = pipeline_cache_stats()
    assert after["misses"] == built["misses"], "the launch built the pipeline again"
    assert after["hits"] == built["hits"] + 1
    torch.testing.assert_close(out, (x.double() * scale).float())


def test_the_launch_joins_a_build_under_way(request):
    # No wait: the launch comes while the background build may still run; one build either way.
    scale = fresh_scale(request, 1.0)
    x = torch.randn(777)
    out = torch.full_like(x, float("nan"))
    prebuild.wait_idle()
    before = pipeline_cache_stats()
    scaled_copy[(4,)](x, out, x.numel(), SCALE=scale, BLOCK=256)
    prebuild.wait_idle()
    assert pipeline_cache_stats()["misses"] == before["misses"] + 1
    torch.testing.assert_close(out, (x.double() * scale).float())


def _child(tmp_path, code: str, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"  # @triton.jit needs a file
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_BACKEND": "mps", "TRITON_CACHE_DIR": str(tmp_path), **env})


KERNEL = """
import os, sys, time, torch, triton, triton.language as tl, triton_mps
from triton_mps.backend import prebuild

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

def stats():
    return dict(triton_mps.get_device(None).pipeline_cache_stats())
"""


# Every pipeline build fails (a kernel the strict Metal check rejects) until `device.build_pipeline = real`.
FAILING_BUILDS = """
import triton_mps.backend.device as device
real = device.build_pipeline
def failing(dev, source, name, *args, **kw):
    broken = source.replace("using namespace metal;", "using namespace metal; tmps_no_such_type tmps_broken;", 1)
    return real(dev, broken, name, *args, **kw)
device.build_pipeline = failing
"""


def test_off_builds_at_the_first_launch(tmp_path):
    r = _child(tmp_path, KERNEL + """
x = torch.zeros(10)
k.warmup(x, 10, BLOCK=16, grid=(1,))
time.sleep(0.5)
assert stats()["misses"] == 0, stats()
k[(1,)](x, 10, BLOCK=16)
assert stats()["misses"] == 1 and x.sum().item() == 10
print("ok")
""", TRITON_MPS_PREBUILD="0")
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


def test_a_malformed_setting_is_a_clear_error(tmp_path):
    r = _child(tmp_path, KERNEL + """
try:
    k.warmup(torch.zeros(10), 10, BLOCK=16, grid=(1,))
except triton_mps.InvalidArgument as e:
    print("raised:", e)
""", TRITON_MPS_PREBUILD="two")
    assert "raised: TRITON_MPS_PREBUILD='two'" in r.stdout, r.stdout + r.stderr[-3000:]


def test_a_failed_build_is_reported_at_the_launch(tmp_path):
    # A kernel the strict Metal check rejects: the background build fails, the launch raises it.
    r = _child(tmp_path, KERNEL + FAILING_BUILDS + """
x = torch.zeros(10)
k.warmup(x, 10, BLOCK=16, grid=(1,))
prebuild.wait_idle()
try:
    k[(1,)](x, 10, BLOCK=16)
except triton_mps.CompileError as e:
    print("raised at launch:", type(e).__name__, "tmps_no_such_type" in str(e))
""")
    assert "raised at launch: CompileError True" in r.stdout, r.stdout + r.stderr[-3000:]


def test_fork_and_exit_with_builds_queued(tmp_path):
    # Many kernels queued, then fork: the child launches (no build it inherits is left
    # unfinished); then the parent exits at once with builds still queued.
    r = _child(tmp_path, KERNEL + """
for b in (16, 32, 64, 128, 256, 512):
    k.warmup(torch.zeros(10), 10, BLOCK=b, grid=(1,))
pid = os.fork()
if pid == 0:
    x = torch.zeros(10)
    for b in (16, 32, 64, 128, 256, 512):
        k[(1,)](x, 10, BLOCK=b)
    os._exit(0 if x.sum().item() == 60 else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
t = time.perf_counter()
""", TRITON_MPS_DEVICE="sim")
    assert r.returncode == 0 and "child 0" in r.stdout, r.stdout + r.stderr[-3000:]


def test_a_waiting_launch_runs_queued_builds_meanwhile():
    # Build A is under way on the build thread; the launch needing A runs B and C on its own
    # thread instead of sitting idle (prebuild.help_while_building), then returns.
    import threading

    q = prebuild._Queue()
    a_started, a_release = threading.Event(), threading.Event()
    ran_on: dict[str, int] = {}

    def build(name, before=None, after=None):
        def run():
            if before:
                before()
            ran_on[name] = threading.get_ident()
            if after:
                after()
        return run

    q.start(("a", 1), build("a", before=lambda: (a_started.set(), a_release.wait(10))), limit=1)
    assert a_started.wait(10)
    q.start(("b", 2), build("b"), limit=1)
    q.start(("c", 3), build("c", after=a_release.set), limit=1)
    assert q.help_while_building(("x", 0)) == 0  # nothing of that key under way: no help
    assert q.help_while_building(("a", 1)) == 2
    me = threading.get_ident()
    assert ran_on["b"] == me and ran_on["c"] == me
    q.wait_idle()
    assert ran_on["a"] != me
    q.stop()


DEFERRED = KERNEL + """
x = torch.zeros(10)
ck = k.warmup(x, 10, BLOCK=16, grid=(1,))
ck._init_handles()
print("deferred after load:", ck.function.deferred, ck.n_max_threads)
k[(1,)](x, 10, BLOCK=16)
print("deferred after launch:", ck.function.deferred, x.sum().item())
"""


def test_a_simulator_kernel_loads_before_its_build_finishes(tmp_path):
    # Loading (Triton's _init_handles, Inductor's precompile) does not wait for the build; the
    # first launch does. The result is the same.
    r = _child(tmp_path, DEFERRED, TRITON_MPS_DEVICE="sim")
    assert "deferred after load: True 1024" in r.stdout, r.stdout + r.stderr[-3000:]
    assert "deferred after launch: False 10.0" in r.stdout, r.stdout + r.stderr[-3000:]


@pytest.mark.parametrize("env", [{"TRITON_MPS_DEVICE": "sim", "TRITON_MPS_PREBUILD": "0"},
                                 {"TRITON_MPS_DEVICE": "metal-emu"}], ids=["sim-prebuild-off", "metal-emu"])
def test_loading_builds_where_nothing_builds_ahead_or_the_limit_needs_the_build(tmp_path, env):
    # Without prebuilds a deferral gains nothing; on Metal the pipeline's thread limit (which
    # load_binary returns) is known only once built.
    r = _child(tmp_path, DEFERRED, **env)
    assert "deferred after load: False" in r.stdout, r.stdout + r.stderr[-3000:]
    assert "deferred after launch: False 10.0" in r.stdout, r.stdout + r.stderr[-3000:]


def test_a_failed_deferred_build_raises_at_every_launch(tmp_path):
    r = _child(tmp_path, KERNEL + FAILING_BUILDS + """
x = torch.zeros(10)
ck = k.warmup(x, 10, BLOCK=16, grid=(1,))
ck._init_handles()
print("loaded, deferred:", ck.function.deferred)
for attempt in (1, 2):
    try:
        k[(1,)](x, 10, BLOCK=16)
    except triton_mps.CompileError as e:
        print("launch", attempt, "raised:", "tmps_no_such_type" in str(e), ck.function.deferred)
device.build_pipeline = real  # fixed: the next launch builds and runs
k[(1,)](x, 10, BLOCK=16)
print("then:", x.sum().item())
""", TRITON_MPS_DEVICE="sim")
    out = r.stdout
    assert "loaded, deferred: True" in out, out + r.stderr[-3000:]
    assert "launch 1 raised: True True" in out and "launch 2 raised: True True" in out, out + r.stderr[-3000:]
    assert "then: 10.0" in out, out + r.stderr[-3000:]
