"""The simulator's kernel cache on a disk that refuses writes (full, read-only) and a compiler
killed while it builds: the machine's failures, told apart from the kernel's (issue 30).

Each case runs in a child process (the cache folder and the toolchain are chosen once per
process). A full disk is a real size-limited tmpfs, a read-only cache a real read-only bind
mount: both need root (CI runs as root); elsewhere the tests skip, saying so.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from bad_input import bad_input
from mounts import mounted, read_only_view

pytestmark = pytest.mark.timeout(600)

# A kernel no cache has seen (TAG), built and run in a child; prints one JSON-ish line.
CHILD = textwrap.dedent(r"""
    import glob, os, sys, warnings
    import numpy as np, triton_mps
    warnings.simplefilter("always")
    TEMPLATE = '''
    #include <metal_stdlib>
    using namespace metal;
    // TAG
    kernel void scaled(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) { y[i] = 3.0f * x[i]; }
    '''
    sim = triton_mps.get_device("sim")
    for tag in sys.argv[1:]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                k = triton_mps.compile_msl(TEMPLATE.replace("TAG", tag), "scaled", sim)
            except triton_mps.Error as e:
                print(f"RAISED {type(e).__name__} errno={getattr(e, 'errno', None)} "
                      f"oserror={isinstance(e, OSError)} compile={isinstance(e, triton_mps.CompileError)}: {e}")
                continue
        x = np.random.default_rng().standard_normal(64).astype(np.float32)
        y = np.full(64, np.nan, np.float32)
        k(x, y, grid=2, threads=32)
        sim.synchronize()
        assert np.allclose(y, 3.0 * x.astype(np.float64), rtol=1e-6), y
        for w in seen:
            print("WARNING", str(w.message).replace("\n", " "))
        print("RAN", tag)
        # Libraries built in a temporary stand-in for the cache (read-only test: a private TMPDIR).
        temp = glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "triton_mps-cache-*", "sim", "*.so"))
        print("TEMP_SO", len(temp))
""")


def run_child(tags: list[str], **env: str) -> str:
    r = subprocess.run([sys.executable, "-c", CHILD, *tags], env=dict(os.environ, **env), capture_output=True,
                       text=True, timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def tag() -> str:
    return uuid.uuid4().hex


def entries(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.so")} if folder.is_dir() else set()


def fallback_dir(out: str) -> Path:
    found = re.search(r"temporary directory '([^']+)'", out)
    assert found, out
    return Path(found.group(1))


def fill(folder: Path) -> None:
    """Write until the file system says ENOSPC."""
    with open(folder / "filler", "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)


# ---- a full disk --------------------------------------------------------------------------------

@bad_input("cache on a full disk", given="TRITON_MPS_CACHE_DIR on a tmpfs filled to the last byte",
           raises="warning:RuntimeWarning", says="No space left on device")
def test_full_cache_disk_falls_back_with_the_reason(tmp_path, bad):
    with mounted(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], tmp_path / "full") as cache:
        fill(cache)
        out = run_child([tag()], TRITON_MPS_CACHE_DIR=str(cache))
        assert "RAN" in out, out
        bad.check_message(out)
        assert "the kernel cache is unusable" in out and "caches nothing across processes" in out, out
        assert not entries(cache / "sim")


@bad_input("cache disk fills during a build", given="TRITON_MPS_CACHE_DIR on a tmpfs with 16 KiB free: the probe "
           "fits, the kernel's build does not", raises="warning:RuntimeWarning",
           says="No space left on device); this process builds in the temporary directory")
def test_cache_disk_full_mid_build_moves_the_build(tmp_path, bad):
    with mounted(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], tmp_path / "small") as cache:
        (cache / "reserve").write_bytes(b"\0" * 16384)
        fill(cache)
        (cache / "reserve").unlink()
        first, second = tag(), tag()
        out = run_child([first, second], TRITON_MPS_CACHE_DIR=str(cache))
        assert out.count("RAN") == 2, out
        bad.check_message(out)
        assert not entries(cache / "sim")  # nothing half-written left in the cache
        assert not [p for p in (cache / "sim").iterdir() if ".tmp-" in p.name]


@bad_input("cache and TMPDIR on a full disk", given="TRITON_MPS_CACHE_DIR and TMPDIR on one full tmpfs",
           raises="triton_mps.HostError", says="No space left on device")
def test_no_room_anywhere_is_a_host_error_with_errno(tmp_path, bad):
    with mounted(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], tmp_path / "full") as disk:
        (disk / "cache").mkdir()
        (disk / "tmp").mkdir()
        fill(disk)
        out = run_child([tag()], TRITON_MPS_CACHE_DIR=str(disk / "cache"), TMPDIR=str(disk / "tmp"))
        assert "RAISED HostError errno=28 oserror=True compile=False" in out, out
        bad.check_message(out)


# ---- a read-only cache ------------------------------------------------------------------------------

@bad_input("read-only cache that holds the kernels", given="a filled cache mounted read-only (a container image)",
           raises="warning:RuntimeWarning", says="kernels already in the cache are still read from it")
def test_read_only_cache_serves_hits_and_builds_misses_elsewhere(tmp_path, bad):
    source = tmp_path / "cache"
    old, new = tag(), tag()
    out = run_child([old], TRITON_MPS_CACHE_DIR=str(source))
    assert "RAN" in out and "WARNING" not in out, out
    built = entries(source / "sim")
    assert len(built) == 1
    with read_only_view(source, tmp_path / "ro") as ro:
        (tmp_path / "tmp").mkdir()
        out = run_child([old, new], TRITON_MPS_CACHE_DIR=str(ro), TMPDIR=str(tmp_path / "tmp"))
        assert out.count("RAN") == 2, out
        bad.check_message(out)
        # The old kernel came from the read-only cache (nothing built); the new one was built in the
        # temporary folder, which is gone with the child.
        assert re.findall(r"TEMP_SO (\d+)", out) == ["0", "1"], out
        assert entries(ro / "sim") == built
        assert not fallback_dir(out).exists()


# ---- a compiler killed by a signal -------------------------------------------------------------------

def zig_that_dies(tmp_path: Path, deaths: int, when: str) -> dict[str, str]:
    """A `zig` that runs the real one, but kills itself with SIGKILL the first `deaths` times its
    arguments contain `when` (the strict check: -fsyntax-only; the kernel's compile: kernel.cpp)."""
    import ziglang

    real = Path(ziglang.__file__).parent / "zig"
    folder = tmp_path / "bin"
    folder.mkdir()
    count = tmp_path / "deaths"
    count.write_text(str(deaths))
    zig = folder / "zig"
    zig.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case " $* " in *" {when} "*)
          n=$(cat '{count}')
          if [ "$n" -gt 0 ]; then echo $((n - 1)) > '{count}'; kill -9 $$; fi;;
        esac
        exec '{real}' "$@"
        """))
    zig.chmod(0o755)
    return {"TRITON_MPS_ZIG": str(zig), "TRITON_MPS_CACHE_DIR": str(tmp_path / "cache")}


@bad_input("compiler killed once", given="the strict Metal check's compiler killed by SIGKILL once (the OOM killer)",
           raises="none", says="the tool runs once more; the kernel builds and runs, no error")
def test_compiler_killed_once_is_retried(tmp_path, bad):
    env = zig_that_dies(tmp_path, 1, "-fsyntax-only")
    out = run_child([tag()], **env)
    assert "RAN" in out and "RAISED" not in out, out
    assert (tmp_path / "deaths").read_text().strip() == "0"  # it did die once


@bad_input("compiler killed by a signal", given="the strict Metal check's compiler killed by SIGKILL every time",
           raises="triton_mps.HostError",
           says="was killed by signal 9 (SIGKILL: Killed), twice; the kernel was not checked")
def test_strict_check_killed_is_not_a_verdict_on_the_kernel(tmp_path, bad):
    env = zig_that_dies(tmp_path, 2, "-fsyntax-only")
    out = run_child([tag(), tag()], **env)  # the second kernel: the tool lives again, the process is usable
    assert "RAISED HostError errno=None oserror=True compile=False" in out, out
    bad.check_message(out)
    assert "the strict Metal check" in out and "zig clang" in out and "Metal would reject" not in out, out
    assert out.count("RAN") == 1, out


def test_kernel_compile_killed_names_the_compile(tmp_path):
    env = zig_that_dies(tmp_path, 2, "kernel.cpp")
    out = run_child([tag()], **env)
    assert "RAISED HostError" in out and "the kernel's compile" in out and "signal 9" in out, out
