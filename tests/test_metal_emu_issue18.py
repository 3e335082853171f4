"""Issue 18 item 6 and issue 21 item 6 on the emulated Metal device (and the simulator where the
rule is ours): each test fails on the code before its fix (commit 3e3c992)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import triton_mps
from triton_mps import _core, arrays

pytestmark = pytest.mark.skipif(not hasattr(_core, "emu_stats"), reason="built without the emulated Metal device")

ADD1 = """
kernel void add1(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i] = x[i] + 1.0f;
}
"""


@pytest.fixture(autouse=True)
def no_violations():
    _core.emu_clear_violations()
    yield
    assert _core.emu_violations() == []


@pytest.mark.parametrize("kind", ["metal-emu", "sim"])
def test_misaligned_views_are_rejected(kind):
    # Metal needs setBuffer offsets of `device float*` aligned to 4: a float view one byte into
    # a byte array was bound as is (shifted reads on a GPU).
    dev = triton_mps.get_device(kind)
    k = triton_mps.compile_msl(ADD1, "add1", dev)
    raw = np.zeros(4 * 64 + 16, np.uint8)
    start = (-raw.ctypes.data % 16) + 1  # one byte past a 16-byte boundary
    x = raw[start : start + 4 * 64].view(np.float32)
    y = np.zeros(64, np.float32)
    with pytest.raises(triton_mps.InvalidArgument, match=r"'x' .*starts 1 bytes past a multiple of 4.*aligned"):
        k(x, y, 64, grid=1, threads=64)
    k(np.array(x), y, 64, grid=1, threads=64)  # the copy the message suggests works
    dev.synchronize()
    np.testing.assert_array_equal(y, np.array(x) + 1)


def test_the_emulation_rejects_misaligned_buffer_offsets():
    got = _core.emu_misuse("misaligned_offset")
    assert got.startswith("Metal API validation:") and "not a multiple of 4" in got, got
    _core.emu_clear_violations()


def test_emulated_m5_is_apple_family_10():
    # MTLGPUFamilyApple10 is the newest family (M5); the emulation answered 11.
    assert [_core.emu_gpu_family(c) for c in ("Apple M1", "Apple M2", "Apple M3", "Apple M4 Max", "Apple M5 Pro")] == [
        7, 8, 9, 9, 10]


def test_empty_arrays_bind_their_pool_buffer():
    # Issue 21 item 6: `empty` arrays were re-wrapped as host pages, so an overrun stayed inside
    # the wrapped page and Metal (and its validation) never saw it.
    emu = triton_mps.get_device("metal-emu")
    a = triton_mps.empty(64, np.float32, emu)  # 256 bytes: a pool size class of its own
    pooled = arrays.pool_buffer_of(a[8:])
    assert pooled is not None and pooled.nbytes == 256
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = np.zeros(1024, np.float32)
    with pytest.raises(triton_mps.DispatchError):
        k(x, a, 1024, grid=8, threads=128)  # 4 KiB written into the 256-byte array
        emu.synchronize()
    b = triton_mps.empty(64, np.float32, emu)
    k(x[:64], b, 64, grid=1, threads=64)
    emu.synchronize()
    np.testing.assert_array_equal(b, 1.0)


def _stat(name: str) -> int:
    return _core.emu_stats()[name]


def test_an_archive_miss_compiles_once():
    # A miss built the pipeline, then compiled it again into the archive.
    emu = triton_mps.get_device("metal-emu")
    compiles = ("pipelines_built", "archive_compiles")
    before = {k: _stat(k) for k in (*compiles, "pipelines_from_archive")}
    # A kernel no earlier run put into the on-disk archive.
    triton_mps.compile_msl(ADD1.replace("1.0f", f"{time.time_ns() % 10**9}.0f"), "add1", emu)
    delta = {k: _stat(k) - v for k, v in before.items()}
    assert sum(delta[k] for k in compiles) == 1, delta
    assert delta["pipelines_from_archive"] == 1, delta  # loaded from the archive it was compiled into


_ARCHIVE_CHILD = """
import sys, triton_mps
src = "kernel void k(device float* y [[buffer(0)]]) {{ y[0] = {}; }}"
for v in sys.argv[1:]:
    triton_mps.compile_msl(src.format(v), "k", triton_mps.get_device("metal-emu"))
"""


def _archive_run(cache, *values, **env):
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _ARCHIVE_CHILD, *values], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TRITON_MPS_CACHE_DIR": str(cache), **env})
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_archive_is_written_at_exit_and_capped(tmp_path):
    # The archive only grew. Written at exit: on the emulated device the old code wrote it too
    # (its devices were destroyed at interpreter teardown); a Mac may leak them, hence the
    # explicit flush at exit, which this part checks but cannot tell apart.
    import shutil

    _archive_run(tmp_path, "1.0f", "2.0f")  # warms the simulator's kernel cache: later builds are quick
    shutil.rmtree(tmp_path / "metal")
    _archive_run(tmp_path, "1.0f")
    [archive] = (tmp_path / "metal").glob("*.metallib-archive")
    lines = archive.read_text().splitlines()
    assert lines[0] == "tmps-emu-archive-v1" and len(lines) == 2, lines
    # Over the cap (here 2 KiB) the archive starts over instead of growing.
    archive.write_text("\n".join(lines + [f"stale-{i:04d}" + "x" * 60 for i in range(100)]) + "\n")
    _archive_run(tmp_path, "2.0f", TRITON_MPS_METAL_ARCHIVE_MB=str(2048 / 2**20))
    lines = archive.read_text().splitlines()
    assert archive.stat().st_size <= 2048 and len(lines) == 2 and not any("stale" in x for x in lines), lines


def test_validation_too_late_for_torchs_device_warns(monkeypatch):
    import sys
    from types import SimpleNamespace

    from triton_mps import _setup

    monkeypatch.setenv("TRITON_MPS_METAL_VALIDATION", "1")
    monkeypatch.setenv("MTL_SHADER_VALIDATION", "0")
    monkeypatch.setenv("MTL_DEBUG_LAYER", "0")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(_C=SimpleNamespace(_has_mps=True)))
    with pytest.warns(RuntimeWarning, match="torch was imported before triton_mps.*shader validation stays off"):
        _setup.enable_metal_validation()
    import os

    assert os.environ["MTL_SHADER_VALIDATION"] == "1"


def test_launches_in_flight_share_the_wrap_of_the_same_host_memory(rng):
    # Issue 18 item 4: each launch wrapped host memory in a new no-copy MTLBuffer, so Metal's
    # hazard tracking did not order two kernels sharing a numpy array (the second could read y
    # before the first wrote it).
    emu = triton_mps.get_device("metal-emu")
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = rng.standard_normal(3000).astype(np.float32)
    y, z = np.zeros(3000, np.float32), np.zeros(3000, np.float32)
    before = _stat("no_copy_buffers")
    _core.emu_hold_queues(True)  # both launches in flight
    try:
        k(x, y, 3000, grid=24, threads=128)
        k(y, z, 3000, grid=24, threads=128)
    finally:
        _core.emu_hold_queues(False)
    emu.synchronize()
    assert _stat("no_copy_buffers") - before == 3  # x, y (once for both launches), z
    np.testing.assert_array_equal(z, (x + 1) + 1)  # the second kernel read what the first wrote


_EARLY_DEVICE_CHILD = """
import triton_mps
from triton_mps import _core
_core.emu_misuse("commit_twice")  # a Metal device made before ours, as PyTorch's would be
_core.emu_clear_violations()
dev = triton_mps.get_device("metal-emu")
k = triton_mps.compile_msl('''
kernel void store_next(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i + 1] = x[i];
}''', "store_next", dev)
xb, yb = dev.buffer(1024), dev.buffer(1024)
try:
    k(xb, yb, 256, grid=8, threads=32)
    dev.synchronize()
    print("no error")
except triton_mps.DispatchError as e:
    print(e)
"""


def test_validation_is_on_before_any_metal_device_exists():
    # Metal reads MTL_SHADER_VALIDATION at the process's first device. The switches were set
    # when triton_mps enumerated its devices: a device made before (PyTorch's) kept validation
    # off while we reported it on. Now they are set when triton_mps is imported.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("MTL_SHADER_VALIDATION", "MTL_DEBUG_LAYER")}
    r = subprocess.run([sys.executable, "-c", _EARLY_DEVICE_CHILD], capture_output=True, text=True, timeout=300,
                       env={**env, "TRITON_MPS_METAL_VALIDATION": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Metal shader validation (TRITON_MPS_METAL_VALIDATION): Invalid device store" in r.stdout, r.stdout
