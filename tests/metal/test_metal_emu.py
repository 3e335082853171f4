"""The Metal backend (csrc/metal/) on the emulated Metal runtime (csrc/metal_emu/, Linux builds).

Each test drives our real Metal code through metal-cpp against fakes that enforce Metal's API
validation rules and run kernels on the simulator; tests named after an issue-11 finding fail
without its fix. The tests after "Issue 18 item 6 and issue 21 item 6" (some also on the simulator,
where the rule is ours) each fail on the code before their fix (commit 3e3c992).
"""

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


@pytest.fixture(scope="module")
def emu():
    return triton_mps.get_device("metal-emu")


@pytest.fixture(autouse=True)
def no_violations():
    _core.emu_clear_violations()
    yield
    assert _core.emu_violations() == []


def test_emulated_device_is_listed_and_never_the_default(emu, monkeypatch):
    assert "emulated" in emu.name and emu.is_emulated and not emu.is_simulator
    assert emu in triton_mps.devices() or any(d.name == emu.name for d in triton_mps.devices())
    monkeypatch.delenv("TRITON_MPS_DEVICE", raising=False)
    assert triton_mps.default_device().is_simulator  # Linux: the simulator stays the default
    monkeypatch.setenv("TRITON_MPS_DEVICE", "metal-emu")
    assert triton_mps.default_device().is_emulated
    index = next(i for i, d in enumerate(triton_mps.devices()) if d.is_emulated)
    assert triton_mps.get_device(str(index)).is_emulated


def test_launch_on_pool_buffers(emu, rng):
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = triton_mps.empty(1000, np.float32, emu)
    x[:] = rng.standard_normal(1000)
    y = triton_mps.empty(1000, np.float32, emu)
    y.fill(np.nan)
    k(x, y, 1000, grid=8, threads=128)
    emu.synchronize()
    np.testing.assert_array_equal(y, x + 1)


@pytest.mark.parametrize("start", [0, 1, 17])
def test_unaligned_numpy_arrays_are_wrapped(emu, rng, start):
    # Finding 2: numpy/torch CPU memory is not 16 KiB-aligned; Metal's no-copy buffers need it.
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    backing = rng.standard_normal(3000).astype(np.float32)
    x = backing[start : start + 1000]
    y = np.full(1000 + start, np.nan, np.float32)[start:]
    k(x, y, 1000, grid=8, threads=128)
    emu.synchronize()
    np.testing.assert_array_equal(y, x + 1)


def test_buffer_offset_equal_to_length_is_rejected(emu):
    # Finding 12: Metal requires offset < length.
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    buf = emu.buffer(4096)
    y = triton_mps.empty(4, np.float32, emu)
    with pytest.raises(triton_mps.InvalidArgument, match="not inside the buffer"):
        k(buf.view(4096, 0), y, 0, grid=1, threads=1)


def test_native_mtlbuffer_is_wrapped_with_offset(emu, rng):
    # Finding 1: MetalDevice must override wrap_native_buffer (torch `mps` tensors).
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    handle = _core.emu_new_buffer(8192, False)
    try:
        host = np.frombuffer((np.ctypeslib.as_ctypes_type(np.float32) * 2048).from_address(
            _core.emu_buffer_memory(handle)), np.float32)
        host[:] = rng.standard_normal(2048)
        x = emu.wrap_native(handle, 64 * 4, 1000 * 4)
        y = triton_mps.empty(1000, np.float32, emu)
        k(x, y, 1000, grid=8, threads=128)
        emu.synchronize()
        np.testing.assert_array_equal(y, host[64:1064] + 1)
    finally:
        del x
        _core.emu_release(handle)


def test_private_buffer_has_no_cpu_view(emu):
    # Finding 6: contents() is NULL for private storage; views must raise, not segfault.
    handle = _core.emu_new_buffer(4096, True)
    try:
        buf = emu.wrap_native(handle, 0, 4096)
        with pytest.raises(triton_mps.InvalidArgument, match="private"):
            buf.bytes_view()
        with pytest.raises(triton_mps.InvalidArgument, match="private"):
            _ = buf.address
        del buf
    finally:
        _core.emu_release(handle)


def _settled_live_objects() -> dict[str, int]:
    # The queue thread drops its last references to a command buffer just after the completion
    # handlers ran, i.e. possibly after synchronize() returned: wait until none is alive.
    deadline = time.monotonic() + 5
    live = _core.emu_live_objects()
    while any(name in live for name in ("MTLEmuCommandBuffer", "MTLEmuComputeCommandEncoder")):
        assert time.monotonic() < deadline, live
        time.sleep(0.01)
        live = _core.emu_live_objects()
    return live


def test_objects_are_released(emu, rng):
    # Every object our code creates per launch is released once the launch completed.
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = rng.standard_normal(256).astype(np.float32)
    y = np.zeros(256, np.float32)
    k(x, y, 256, grid=1, threads=256)
    emu.synchronize()
    before = _settled_live_objects()
    for _ in range(5):
        k(x, y, 256, grid=1, threads=256)
        emu.synchronize()
    assert _settled_live_objects() == before
    assert _core.emu_stats()["autorelease_without_pool"] == 0


WIDE = """
kernel void wide(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = float(i); }
"""


def test_pipeline_descriptor_gets_the_threadgroup_size(emu):
    # Finding 5: without setMaxTotalThreadsPerThreadgroup a register-heavy kernel may get a lower
    # limit (modelled: 256 threads); with it, the pipeline accepts num_warps * 32 threads.
    _core.emu_set_unhinted_thread_limit(256)
    try:
        plain = emu.compile(WIDE, "wide", label="wide_plain")
        assert plain.max_total_threads_per_threadgroup == 256
        hinted = emu.compile(WIDE, "wide", label="wide_hinted", max_threads=512)
        assert hinted.max_total_threads_per_threadgroup >= 512
        y = triton_mps.empty(1024, np.float32, emu)
        y.fill(np.nan)
        triton_mps.Kernel(hinted, emu)(y, grid=2, threads=512)
        emu.synchronize()
        np.testing.assert_array_equal(y, np.arange(1024, dtype=np.float32))
    finally:
        _core.emu_set_unhinted_thread_limit(1024)


def test_triton_msl_records_its_threadgroup_size():
    from triton_mps.compiler.abi import threads_from_msl, threads_marker

    assert threads_from_msl("kernel void k() {}\n" + threads_marker(512)) == 512
    assert threads_from_msl("kernel void k() {}\n") == 0


def _stat(name: str) -> int:
    return _core.emu_stats()[name]


def test_counter_sample_buffers_are_reused(emu, rng):
    # Finding 9: one counter sample buffer per timed batch; they are pooled now.
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = triton_mps.empty(256, np.float32, emu)
    x[:] = rng.standard_normal(256)
    y = triton_mps.empty(256, np.float32, emu)
    k(x, y, 256, grid=1, threads=256, timed=True)  # warm the pool
    emu.synchronize()
    before = _stat("counter_sample_buffers")
    timings = []
    for _ in range(6):
        timings.append(k(x, y, 256, grid=1, threads=256, timed=True))
        emu.synchronize()
    assert _stat("counter_sample_buffers") == before
    assert all(t.ready and not t.error and t.end_ns >= t.start_ns for t in timings)
    np.testing.assert_array_equal(y, x + 1)


def test_encoder_error_reporting_only_when_debugging(emu, rng, monkeypatch):
    # Finding 9: MTLCommandBufferErrorOptionEncoderExecutionStatus costs GPU time on every
    # command buffer; only TRITON_MPS_METAL_DEBUG=1 turns it on.
    k = triton_mps.compile_msl(ADD1, "add1", emu)
    x = rng.standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    monkeypatch.delenv("TRITON_MPS_METAL_DEBUG", raising=False)
    before = _stat("command_buffers_with_error_options")
    k(x, y, 64, grid=1, threads=64)
    emu.synchronize()
    assert _stat("command_buffers_with_error_options") == before
    monkeypatch.setenv("TRITON_MPS_METAL_DEBUG", "1")
    k(x, y, 64, grid=1, threads=64)
    emu.synchronize()
    assert _stat("command_buffers_with_error_options") == before + 1
    np.testing.assert_array_equal(y, x + 1)


def test_archive_writes_are_batched(emu):
    # Finding 8: each pipeline miss rewrote the whole binary archive.
    before = _stat("archive_serializations")
    for i in range(6):
        triton_mps.compile_msl(ADD1.replace("1.0f", f"{i + 2}.0f"), "add1", emu)
    assert _stat("archive_serializations") - before <= 1


def _emulated_info(env: dict[str, str], code: str = "") -> str:
    import os
    import subprocess
    import sys

    script = (
        "import triton_mps\n"
        "d = triton_mps.get_device('metal-emu')\n"
        "print(d.info['generation'], d.info['gpu_family'])\n" + code
    )
    r = subprocess.run([sys.executable, "-c", script], env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("chip, generation, family", [
    ("Apple M1", 1, "apple7"), ("Apple M3 Pro", 3, "apple9"), ("Apple M4 Max", 4, "apple9"),
    ("Apple M5", 5, "apple10"), ("Apple M5 Max", 5, "apple10"),
])
def test_generation_comes_from_the_chip_name(chip, generation, family):
    # Finding 10: the generation was family - 6 (M4 reported as 3, M5 as 4).
    assert _emulated_info({"TRITON_MPS_EMU_CHIP": chip}).split() == [str(generation), family]


def test_m5_pro_and_max_core_counts():
    from triton_mps.chips import GPU_CORES

    assert GPU_CORES["M5 Max"] > GPU_CORES["M5 Pro"] > GPU_CORES["M5"]


def test_old_macos_gets_a_clear_message():
    # Finding 10: MSL 3.1 needs macOS 14; Metal's own error on macOS 13 does not say so.
    code = (
        "try:\n"
        "    triton_mps.compile_msl('kernel void k(device float* y [[buffer(0)]]) { y[0] = 1; }', 'k', d)\n"
        "except triton_mps.Unavailable as e:\n"
        "    print('ERROR', e)\n"
    )
    out = _emulated_info({"TRITON_MPS_EMU_MACOS": "13.6"}, code)
    assert "needs macOS 14.0 or later" in out and "13.6" in out


@pytest.mark.parametrize("misuse, message", [
    ("encode_after_commit", "committed command buffer"),
    ("two_open_encoders", "another encoder"),
    ("commit_with_open_encoder", "missing endEncoding"),
    ("commit_twice", "commit called twice"),
    ("handler_after_commit", "after commit"),
    ("offset_equal_to_length", "must be < the buffer's length"),
    ("unaligned_no_copy", "not page-aligned"),
    ("threadgroup_memory_not_16", "multiple of 16"),
    ("threadgroup_memory_over_32k", "exceeds maxThreadgroupMemoryLength"),
    ("over_release", "over-release"),
    ("message_to_released", "deallocated instance"),
    ("private_contents", ""),
])
def test_the_emulation_catches_misuse(misuse, message):
    # The fakes enforce Metal's validation rules (csrc/metal_emu/RULES.md): each misuse, done
    # through metal-cpp as our code would, is reported.
    got = _core.emu_misuse(misuse)
    if message:
        assert got.startswith("Metal API validation:") and message in got, got
    else:
        assert got == ""
    _core.emu_clear_violations()


@pytest.mark.parametrize("check", ["handler_blocks_only_handlers", "wait_after_handlers", "max_command_buffer_count"])
def test_the_emulation_threads_as_metal_does(check):
    # Issue 18 item 2 (RULES.md): completed handlers run on a completion thread of their own (a
    # blocked handler does not stop the GPU), waitUntilCompleted returns only after the handlers
    # returned, and a queue holds at most 64 uncompleted command buffers (commandBuffer blocks).
    assert _core.emu_threading_check(check) == ""
    assert _core.emu_violations() == []


def test_acquire_release_atomics_get_device_scope_fences():
    # Finding 4: acquire/release atomics were relaxed atomics between threadgroup barriers, which
    # order memory within one threadgroup only. Now: MSL 3.2 device-scope fences where the OS
    # has MSL 3.2 (compiled out below: a documented limit). The memory-model effect itself can
    # only be observed on a GPU (docs/mac-checklist.md); this checks what is emitted and chosen.
    from triton_mps.compiler.abi import msl_version_for
    from triton_mps.compiler.ops.memory import DEVICE_FENCE_HELPER

    assert "thread_scope_device" in DEVICE_FENCE_HELPER and "__METAL_VERSION__ >= 320" in DEVICE_FENCE_HELPER
    uses = "kernel void k() { TMPS_DEVICE_FENCE(); }"
    assert msl_version_for(uses, "3.2") == "3.2"
    assert msl_version_for(uses, "3.1") == "3.1"
    assert msl_version_for("kernel void k() {}", "3.2") == "3.1"


def test_newest_msl_follows_the_os():
    assert _emulated_info({"TRITON_MPS_EMU_MACOS": "14.5"}, "print(d.info['msl_version'])").split()[-1] == "3.1"
    assert _emulated_info({"TRITON_MPS_EMU_MACOS": "15.1"}, "print(d.info['msl_version'])").split()[-1] == "3.2"


_STREAM_LOCK_SCRIPT = r'''
import threading, time
import numpy as np
import triton_mps
from triton_mps import _core

dev = triton_mps.get_device("metal-emu")
k = triton_mps.compile_msl("""
kernel void add1(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) { y[i] = x[i] + 1.0f; }
""", "add1", dev)
dev.set_commit_threshold(1)
x = np.arange(64, dtype=np.float32)
ys = [np.zeros(64, np.float32) for _ in range(40)]
_core.emu_hold_queues(True)

def launcher():
    for y in ys:  # past 32 batches in flight, a launch waits for the oldest, holding the stream lock
        k(x, y, grid=1, threads=64)

t = threading.Thread(target=launcher)
t.start()
time.sleep(1.0)
threading.Timer(0.5, _core.emu_hold_queues, args=(False,)).start()
# The completion handler needs the GIL to drop the numpy owners; `pending` must not hold the
# GIL while it waits for the stream lock.
print("pending", dev.pending)
t.join()
dev.synchronize()
assert all((y == x + 1).all() for y in ys)
print("ok")
'''


def test_stream_lock_is_never_awaited_with_the_gil_held():
    # Finding 11: `pending` / `set_commit_threshold` took the stream lock with the GIL held while
    # a launch holding that lock waited for a completion handler that needs the GIL: deadlock.
    import subprocess
    import sys

    try:
        r = subprocess.run([sys.executable, "-c", _STREAM_LOCK_SCRIPT], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: the stream lock was awaited with the GIL held")
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_native_buffer_of_another_device_is_rejected(emu):
    # Finding 1: wrap_native_buffer checks the MTLBuffer's device.
    handle = _core.emu_new_foreign_buffer(4096)
    try:
        with pytest.raises(triton_mps.InvalidArgument, match="another Metal device"):
            emu.wrap_native(handle, 0, 4096)
    finally:
        _core.emu_release(handle)


# ---- Issue 18 item 6 and issue 21 item 6 ----------------------------------------------------


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


def test_archive_misses_from_threads_compile_at_the_same_time(emu, monkeypatch):
    # Issue 28 item 5: a miss compiled into the one binary archive with its mutex held, so misses
    # from several threads (background prebuilds, autotuning configs) compiled one after another.
    # Each emulated compile takes 500 ms here; an archive used by two threads at once is a
    # violation (checked by the fixture).
    from concurrent.futures import ThreadPoolExecutor

    source = f"// {time.time_ns()}\n" + ADD1  # keys no earlier run put into the on-disk archive
    triton_mps.compile_msl(source, "add1", emu)  # the simulator compiles the source once, untimed
    monkeypatch.setenv("TRITON_MPS_EMU_COMPILE_MS", "500")

    def build(threads: int) -> float:
        start = time.perf_counter()
        triton_mps.compile_msl(source, "add1", emu, max_threads=threads)  # part of the archive's key
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        each = list(pool.map(build, [32, 64, 96, 128]))
    wall = time.perf_counter() - start
    # One after another: >= 2 s. At the same time: about one compile.
    assert wall < 1.25, (wall, each)


_READ_ONLY_CHILD = """
import sys, warnings
import triton_mps
from triton_mps import _core
warnings.simplefilter("ignore")
emu = triton_mps.get_device("metal-emu")
src = "kernel void k(device float* y [[buffer(0)]]) {{ y[0] = {}; }}"
for v in sys.argv[1:]:
    before = _core.emu_stats()
    triton_mps.compile_msl(src.format(v), "k", emu)
    after = _core.emu_stats()
    print(v, after["archive_compiles"] - before["archive_compiles"],
          after["pipelines_from_archive"] - before["pipelines_from_archive"])
"""


def test_read_only_cache_serves_metal_archive_hits(tmp_path):
    # Issue 30 item 2: a cache baked into an image (read-only) still serves the binary archive's
    # pipelines; a miss compiles (into an archive in memory) and the failed write costs nothing.
    import os
    import subprocess
    import sys

    from mounts import read_only_view

    def run(cache, *values):
        r = subprocess.run([sys.executable, "-c", _READ_ONLY_CHILD, *values], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "TRITON_MPS_CACHE_DIR": str(cache)})
        assert r.returncode == 0, r.stderr[-3000:]
        return [line.split() for line in r.stdout.splitlines()]

    source = tmp_path / "cache"
    old, new = f"{time.time_ns() % 10**9}.0f", f"{time.time_ns() % 10**9 + 1}.5f"
    assert run(source, old) == [[old, "1", "1"]]  # compiled into the archive, written at exit
    archives = {p.name: p.read_bytes() for p in (source / "metal").glob("*.metallib-archive")}
    assert archives
    with read_only_view(source, tmp_path / "ro") as ro:
        # The old kernel: loaded from the read-only archive, no compile. The new one compiles.
        assert run(ro, old, new) == [[old, "0", "1"], [new, "1", "1"]]
    assert {p.name: p.read_bytes() for p in (source / "metal").glob("*.metallib-archive")} == archives
