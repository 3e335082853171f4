"""Bad input to the native core: the buffer API, the on-disk kernel cache, concurrent
compiles, and the environment. One test per row of docs/errors.md (tests/bad_input.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest
import triton_mps
from bad_input import bad_input
from triton_mps import _env

TEMPLATE = r"""
#include <metal_stdlib>
using namespace metal;
kernel void scaled(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  y[i] = SCALE * x[i];  // TAG
}
"""


def fresh_source(scale: float = 3.0) -> str:
    """A source no cache has seen (the tag makes it unique), so it is really built."""
    return TEMPLATE.replace("SCALE", f"{scale:.1f}f").replace("TAG", uuid.uuid4().hex)


def run(kernel: triton_mps.Kernel, scale: float = 3.0) -> None:
    x = np.random.default_rng().standard_normal(64).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    kernel(x, y, grid=2, threads=32)
    kernel.device.synchronize()
    np.testing.assert_allclose(y, scale * x.astype(np.float64), rtol=1e-6)


def sim_entries(cache: Path) -> list[Path]:
    return sorted((cache / "sim").glob("*.so"))


def forget(sim) -> None:
    """Drop this process's in-memory pipelines, so the next compile reads the disk cache."""
    sim.clear_pipeline_cache()


# ---- the buffer API -------------------------------------------------------------------------------

@bad_input("negative size in the buffer API", given="device.buffer(-1), empty((2, -3)), buf.view(-1, 4)",
           raises="triton_mps.InvalidArgument", says="must be a byte count >= 0, got -1")
def test_negative_sizes(sim, bad):
    with bad.expect():
        sim.buffer(-1)
    with bad.expect():
        sim.buffer(64).view(-1, 4)
    with pytest.raises(triton_mps.InvalidArgument, match=r"negative dimension in shape \(2, -3\)"):
        triton_mps.empty((2, -3))
    with pytest.raises(triton_mps.InvalidArgument, match="max_cached_bytes must be a byte count >= 0"):
        sim.set_pool_config(-1, 1000)


@bad_input("buffer larger than the device allows", given="device.buffer(2**62)",
           raises="triton_mps.OutOfMemory", says="exceeds the device's maximum buffer length")
def test_huge_buffer(sim, bad):
    with bad.expect():
        sim.buffer(1 << 62)


# ---- the on-disk cache (simulator kernel libraries) ---------------------------------------------

@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    monkeypatch.setenv("TRITON_MPS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _damage_and_rebuild(sim, bad, damage) -> None:
    src = fresh_source()
    run(triton_mps.compile_msl(src, "scaled", sim))
    (so,) = sim_entries(Path(os.environ["TRITON_MPS_CACHE_DIR"]))
    forget(sim)
    damage(so)
    with bad.warns():
        k = triton_mps.compile_msl(src, "scaled", sim)
    run(k)
    forget(sim)
    with warnings.catch_warnings():  # the rebuilt entry is good again: no second warning
        warnings.simplefilter("error")
        run(triton_mps.compile_msl(src, "scaled", sim))


@bad_input("corrupted cache entry", given="bytes of a cached kernel library overwritten",
           raises="warning:RuntimeWarning",
           says="does not match its .meta file (truncated or corrupted)); it is rebuilt")
def test_corrupted_cache_entry(sim, cache, bad):
    def damage(so: Path) -> None:
        data = bytearray(so.read_bytes())
        data[len(data) // 2: len(data) // 2 + 64] = b"\xcc" * 64
        so.write_bytes(bytes(data))

    _damage_and_rebuild(sim, bad, damage)


@bad_input("truncated cache entry", given="a cached kernel library cut to half its size",
           raises="warning:RuntimeWarning",
           says="does not match its .meta file (truncated or corrupted)); it is rebuilt")
def test_truncated_cache_entry(sim, cache, bad):
    def damage(so: Path) -> None:
        so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])

    _damage_and_rebuild(sim, bad, damage)


@bad_input("swapped cache entries", given="two kernels' libraries (and .meta files) exchanged on disk",
           raises="warning:RuntimeWarning", says="built for another kernel")
def test_swapped_cache_entries(sim, cache, bad):
    a, b = fresh_source(2.0), fresh_source(5.0)
    run(triton_mps.compile_msl(a, "scaled", sim), 2.0)
    run(triton_mps.compile_msl(b, "scaled", sim), 5.0)
    forget(sim)
    so_a, so_b = sim_entries(cache)
    for suffix in ("", ".meta"):
        pa, pb = Path(str(so_a) + suffix), Path(str(so_b) + suffix)
        tmp = pa.with_name("swap")
        pa.rename(tmp)
        pb.rename(pa)
        tmp.rename(pb)
    with bad.warns():
        ka = triton_mps.compile_msl(a, "scaled", sim)
    run(ka, 2.0)  # the right kernel, not the other one (same entry name, other scale)
    with bad.warns():
        kb = triton_mps.compile_msl(b, "scaled", sim)
    run(kb, 5.0)


@bad_input("stale cache entry", given="an entry replaced by another build's library with a matching .meta",
           raises="warning:RuntimeWarning", says="built for another kernel")
def test_stale_cache_entry(sim, cache, bad):
    a, b = fresh_source(2.0), fresh_source(5.0)
    run(triton_mps.compile_msl(a, "scaled", sim), 2.0)
    (so_a,) = sim_entries(cache)
    run(triton_mps.compile_msl(b, "scaled", sim), 5.0)
    (so_b,) = [p for p in sim_entries(cache) if p != so_a]
    forget(sim)
    so_a.write_bytes(so_b.read_bytes())
    Path(str(so_a) + ".meta").write_bytes(Path(str(so_b) + ".meta").read_bytes())  # consistent size and hash
    with bad.warns():
        k = triton_mps.compile_msl(a, "scaled", sim)
    run(k, 2.0)


@bad_input("cache directory that cannot be created", given="TRITON_MPS_CACHE_DIR under a regular file",
           raises="warning:RuntimeWarning", says="caches nothing across processes: set TRITON_MPS_CACHE_DIR")
def test_unusable_cache_dir(sim, monkeypatch, tmp_path, bad):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TRITON_MPS_CACHE_DIR", str(blocker / "cache"))
    with bad.warns():
        k = triton_mps.compile_msl(fresh_source(), "scaled", sim)
    run(k)


@bad_input("corrupted cache directory", given="the cache's sim/ folder replaced by a file",
           raises="warning:RuntimeWarning", says="the kernel cache is unusable (cannot create")
def test_corrupted_cache_dir(sim, cache, bad):
    cache.mkdir(parents=True)
    (cache / "sim").write_text("garbage")
    with bad.warns():
        k = triton_mps.compile_msl(fresh_source(), "scaled", sim)
    run(k)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
@bad_input("read-only cache directory", given="a cache directory without write permission",
           raises="warning:RuntimeWarning", says="the kernel cache is unusable (cannot write to")
def test_read_only_cache_dir(sim, cache, bad):
    (cache / "sim").mkdir(parents=True)
    (cache / "sim").chmod(0o500)
    try:
        with bad.warns():
            k = triton_mps.compile_msl(fresh_source(), "scaled", sim)
        run(k)
    finally:
        (cache / "sim").chmod(0o700)


# ---- concurrent compiles ----------------------------------------------------------------------------

@bad_input("concurrent compiles, 4 threads", given="the same new kernel compiled by 4 threads at once",
           raises="none", says="one build; every thread gets the same working pipeline")
def test_concurrent_compiles_threads(sim, cache, bad):
    src = fresh_source()
    barrier = threading.Barrier(4)
    kernels: list = []
    errors: list = []

    def work() -> None:
        try:
            barrier.wait()
            kernels.append(triton_mps.compile_msl(src, "scaled", sim))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len({id(k.pipeline) for k in kernels}) >= 1 and len(kernels) == 4
    assert len(sim_entries(cache)) == 1
    for k in kernels:
        run(k)


COMPILE_IN_CHILD = r"""
import sys, warnings
import numpy as np, triton_mps
warnings.simplefilter("error")
sim = triton_mps.get_device("sim")
k = triton_mps.compile_msl(sys.stdin.read(), "scaled", sim)
x = np.arange(64, dtype=np.float32); y = np.zeros(64, np.float32)
k(x, y, grid=2, threads=32); sim.synchronize()
assert (y == 3 * x).all()
print("ok")
"""


@bad_input("concurrent compiles, 2 processes", given="the same new kernel compiled by 2 processes at once, one cache",
           raises="none", says="both build or load it; one entry, no temporary files, no warning")
def test_concurrent_compiles_processes(sim, cache, bad):
    src = fresh_source()
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", COMPILE_IN_CHILD], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(src, timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and out.strip() == "ok", err
        assert "Warning" not in err, err
    # No temporary files left behind: only libraries, their sidecars, and the shared build inputs
    # every library uses (the shim's support object and precompiled header).
    leftovers = [p.name for p in (cache / "sim").iterdir()
                 if not p.name.endswith((".so", ".so.meta")) and not p.name.startswith(("support-", "shim-"))]
    assert len(sim_entries(cache)) == 1 and not leftovers, leftovers


# ---- the environment ----------------------------------------------------------------------------------

@bad_input("unknown TRITON_MPS_DEVICE", given="TRITON_MPS_DEVICE=bogus",
           raises="triton_mps.InvalidArgument",
           says="unknown device 'bogus': use an index, 'metal', 'sim' or 'metal-emu'")
def test_bogus_device(monkeypatch, bad):
    monkeypatch.setenv("TRITON_MPS_DEVICE", "bogus")
    with bad.expect():
        triton_mps.default_device()
    assert _env.problems() == [
        "TRITON_MPS_DEVICE='bogus' is not valid: expected 'metal', 'sim', 'metal-emu' or a device index"]
    monkeypatch.undo()


@bad_input("invalid TRITON_MPS_MEMCHECK", given="TRITON_MPS_MEMCHECK=maybe",
           raises="triton_mps.InvalidArgument", says="TRITON_MPS_MEMCHECK must be 0 or 1, got 'maybe'")
def test_memcheck_maybe(sim, monkeypatch, bad):
    monkeypatch.setenv("TRITON_MPS_MEMCHECK", "maybe")
    with bad.expect():
        triton_mps.compile_msl(TEMPLATE.replace("SCALE", "3.0f"), "scaled", sim)
    monkeypatch.undo()  # before @bad_input's check that the process still works


@bad_input("invalid or unknown TRITON_MPS_* variables at import",
           given="TRITON_MPS_SIM_THREADS=many, TRITON_MPS_LAUNCH_SYNC=maybe, TRITON_MPS_MEMCHEK=0 (a typo)",
           raises="warning:RuntimeWarning",
           says="TRITON_MPS_SIM_THREADS='many' is not valid: expected a number of worker threads from 1 to 4096")
def test_bad_environment_at_import(bad):
    env = dict(os.environ, TRITON_MPS_SIM_THREADS="many", TRITON_MPS_LAUNCH_SYNC="maybe", TRITON_MPS_MEMCHEK="0")
    r = subprocess.run([sys.executable, "-c", "import triton_mps"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" in r.stderr
    bad.check_message(r.stderr)
    assert "TRITON_MPS_LAUNCH_SYNC='maybe' is not valid: expected 1/true/yes/on or 0/false/no/off" in r.stderr
    assert "TRITON_MPS_MEMCHEK is not a triton-mps variable (did you mean TRITON_MPS_MEMCHECK?)" in r.stderr
    # ...and using the simulator with it is an error, not a silent default:
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", "import triton_mps; triton_mps.get_device('sim')"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "TRITON_MPS_SIM_THREADS must be a number of worker threads from 1 to 4096, got 'many'" in r.stderr
