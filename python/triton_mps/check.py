"""`python -m triton_mps check` (or `triton-mps check`): is this machine ready for triton-mps?

One line per check, PASS / WARN / FAIL, with what to do about a WARN or FAIL; `--json` prints
the same as a JSON list. Exit status 1 when a required check fails (the native core, a device
that runs kernels, Triton where it is a dependency, a writable cache), else 0: WARN is for
what is optional (MLX, torch's MPS backend off a Mac, a Triton version we do not test).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

SUPPORTED_TRITON = "3.9.0"
PROBE = """
kernel void check_probe(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * 2.0f + 1.0f;
}
"""


@dataclass
class Check:
    name: str
    status: str  # PASS, WARN, FAIL
    detail: str
    fix: str = ""
    required: bool = False


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _on_mac() -> bool:
    return sys.platform == "darwin"


def check_os() -> Check:
    detail = f"{platform.system()} {platform.release()} {platform.machine()}, Python {platform.python_version()}"
    if _on_mac():
        if platform.machine() != "arm64":
            return Check("os", "WARN", detail, "Apple GPUs need Apple silicon (arm64); an Intel Mac runs the "
                         "simulator only")
        return Check("os", "PASS", detail)
    return Check("os", "PASS", detail + " (no Metal off macOS: kernels run on the simulator)")


def check_core() -> Check:
    try:
        from . import _core

        n = len(_core.devices())
        return Check("native core", "PASS", f"triton_mps._core loaded, {n} device(s)", required=True)
    except Exception as exc:  # any import failure is the finding
        return Check("native core", "FAIL", f"{type(exc).__name__}: {exc}",
                     "reinstall triton-mps (pip install --force-reinstall triton-mps); it builds the C++ core",
                     required=True)


def check_device() -> Check:
    try:
        from . import runtime

        dev = runtime.default_device()
        info = dev.info
        kind = "simulator" if info["is_simulator"] else "Metal"
        detail = (f"{info['name']} ({kind}), GPU family {info['gpu_family']}, "
                  f"{info['max_threads_per_threadgroup']} threads and {info['max_threadgroup_memory']} bytes "
                  "of threadgroup memory per threadgroup")
        return Check("device", "PASS", detail, required=True)
    except Exception as exc:
        return Check("device", "FAIL", f"{type(exc).__name__}: {exc}", "check TRITON_MPS_DEVICE", required=True)


def system_gpu_names() -> str:
    """The GPUs macOS lists (system_profiler), as text; '' elsewhere or when it cannot tell."""
    if platform.system() != "Darwin":
        return ""
    import subprocess

    try:
        return subprocess.run(["system_profiler", "SPDisplaysDataType", "-json"], capture_output=True,
                              text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def check_metal() -> Check:
    try:
        from . import runtime

        metal = [d for d in runtime.devices() if not d.is_simulator and not d.is_emulated]
    except Exception as exc:
        metal = []
        err = f" ({type(exc).__name__}: {exc})"
    else:
        err = ""
    if metal:
        return Check("metal", "PASS", f"Metal device: {metal[0].name}")
    if _on_mac() and "paravirtual" in system_gpu_names().lower():
        return Check("metal", "FAIL", "no usable Metal device: this Mac's GPU is an 'Apple Paravirtual device' (a VM, "
                     "as GitHub's hosted macOS runners: GPU family below apple7, no MPS)" + err,
                     "run on an Apple silicon Mac itself (kernels run on the simulator here: TRITON_MPS_DEVICE=sim)",
                     required=True)
    if _on_mac():
        return Check("metal", "FAIL", "no Metal device" + err,
                     "run on an Apple silicon Mac with macOS 14 or later (not in a VM without GPU access)",
                     required=True)
    return Check("metal", "WARN", "not available (Metal is macOS only)" + err,
                 "nothing to do: kernels run on the simulator here; on a Mac they run on the GPU")


def check_kernel_run() -> Check:
    """Compile and run a tiny MSL kernel on the default device (first run: a compile)."""
    try:
        import numpy as np

        from . import runtime

        t0 = time.perf_counter()
        k = runtime.compile_msl(PROBE, "check_probe")
        x = np.arange(64, dtype=np.float32)
        y = np.full(64, np.nan, np.float32)
        k(x, y, grid=2, threads=32)
        runtime.synchronize()
        if not np.array_equal(y, x * 2 + 1):
            return Check("kernel run", "FAIL", "a test kernel ran but computed wrong values",
                         "report a bug with the output of `python -m triton_mps selftest`", required=True)
        return Check("kernel run", "PASS", f"compiled and ran a test kernel in {time.perf_counter() - t0:.2f} s",
                     required=True)
    except Exception as exc:
        return Check("kernel run", "FAIL", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                     "see the simulator toolchain check; `python -m triton_mps selftest` gives details",
                     required=True)


def check_sim_toolchain() -> Check:
    required = not _on_mac()
    try:
        from . import _core

        t = _core.sim_toolchain()
        return Check("simulator toolchain", "PASS", f"{t['description'] or t['command']}, kernels built for "
                     f"{t['target']}", required=required)
    except Exception as exc:
        return Check("simulator toolchain", "FAIL" if required else "WARN", f"{type(exc).__name__}: {exc}",
                     "pip install ziglang==0.17.1 (the simulator's clang), or set TRITON_MPS_SIM_CXX",
                     required=required)


def check_torch() -> Check:
    version = _version("torch")
    if version is None:
        return Check("torch", "WARN", "not installed",
                     "pip install torch (Triton kernels take torch tensors; numpy arrays work without it)")
    try:
        import torch

        mps = bool(torch.backends.mps.is_available())
    except Exception as exc:
        return Check("torch", "WARN", f"torch {version} fails to import: {exc}", "reinstall torch")
    if _on_mac():
        if mps:
            return Check("torch", "PASS", f"torch {version}, MPS backend available ('mps' tensors)")
        return Check("torch", "WARN", f"torch {version}, MPS backend NOT available",
                     "install a torch build with MPS (the default macOS arm64 wheels have it)")
    return Check("torch", "PASS", f"torch {version} (CPU tensors run on the simulator; MPS is macOS only)")


# What scripts/build-triton-macos.sh takes for a clean build (README "Quick start").
MAC_BUILD_COST = "once: about 35-60 min and ~8 GB of disk at its peak"
TRITON_PYTHONS = ((3, 11), (3, 15))  # triton 3.9.0's Requires-Python: >=3.11,<3.16


def triton_wheel_cache() -> Path:
    """Where scripts/build-triton-macos.sh keeps the triton wheels it builds (scripts/lib.sh's rule)."""
    if os.environ.get("TMPS_TRITON_CACHE"):
        return Path(os.environ["TMPS_TRITON_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or (
        Path.home() / "Library" / "Caches" if _on_mac() else Path.home() / ".cache")
    return Path(base) / "triton-mps" / f"triton-{SUPPORTED_TRITON}"


def cached_triton_wheel() -> Path | None:
    """A wheel that script built for this Python, if there is one."""
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    wheels = sorted((triton_wheel_cache() / "wheels").glob(f"triton-{SUPPORTED_TRITON}-{tag}-{tag}-macosx_*.whl"))
    return wheels[-1] if wheels else None


def mac_triton_fix() -> str:
    """What to run on a Mac to get triton (PyPI has no macOS wheel of it)."""
    low, high = TRITON_PYTHONS
    if not low <= sys.version_info[:2] <= high:
        return (f"triton {SUPPORTED_TRITON} needs Python {low[0]}.{low[1]}-{high[0]}.{high[1]} (this is "
                f"{platform.python_version()}): in a triton-mps checkout, `bash scripts/demo.sh` makes a .venv with "
                "one (brew install python@3.12) and builds triton for it")
    wheel = cached_triton_wheel()
    if wheel is not None:
        return f"a wheel was built before: {sys.executable} -m pip install {wheel}"
    return (f"PyPI has no macOS wheel; build it {MAC_BUILD_COST}, in a triton-mps checkout: "
            f"bash scripts/build-triton-macos.sh --python {sys.executable} --install "
            "(or `bash scripts/demo.sh`, which does it for its .venv)")


def check_triton() -> Check:
    version = _version("triton")
    required = not _on_mac()  # no macOS wheels: optional there (AOT kernels need no triton)
    if version is None:
        return Check("triton", "FAIL" if required else "WARN",
                     "not installed" if required else "not installed (needed for @triton.jit kernels)",
                     f"pip install triton=={SUPPORTED_TRITON}" if required else mac_triton_fix(),
                     required=required)
    try:
        from triton.backends import backends
    except Exception as exc:
        return Check("triton", "FAIL", f"triton {version} fails to import: {exc}", "reinstall triton",
                     required=True)
    if "mps" not in backends:
        return Check("triton", "FAIL", f"triton {version}, but the 'mps' backend is not registered",
                     "reinstall triton-mps (its triton.backends entry point); unset TRITON_BACKENDS_IN_TREE",
                     required=True)
    if version.split("+")[0] != SUPPORTED_TRITON:  # a source build may carry a local "+git<hash>"
        return Check("triton", "WARN", f"triton {version}; triton-mps is built and tested against {SUPPORTED_TRITON}",
                     mac_triton_fix() if _on_mac() else f"pip install triton=={SUPPORTED_TRITON}")
    active = os.environ.get("TRITON_BACKEND", "")
    where = ("active (macOS)" if _on_mac() and not active else
             f"active (TRITON_BACKEND={active})" if active.lower() in ("mps", "metal") else
             "inactive until TRITON_BACKEND=mps is set")
    return Check("triton", "PASS", f"triton {version} (supported), backend 'mps' registered, {where}",
                 required=required)


def check_mlx() -> Check:
    version = _version("mlx")
    if version is None:
        return Check("mlx", "WARN", "not installed (optional: MLX arrays as kernel arguments)",
                     "pip install 'triton-mps[mlx]'")
    try:
        import mlx.core as mx

        mx.eval(mx.array([1.0]) + 1)
        return Check("mlx", "PASS", f"mlx {version}, default device {mx.default_device()}")
    except Exception as exc:
        return Check("mlx", "WARN", f"mlx {version} fails to import or run: {exc}", "reinstall mlx")


def _writable(folder: Path) -> str | None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmps-check-"):
            pass
        return None
    except OSError as exc:
        return str(exc)


def check_cache_dirs() -> Check:
    try:
        from . import _core

        ours = Path(_core.cache_dir())
    except Exception:
        ours = Path(os.environ.get("TRITON_MPS_CACHE_DIR", Path.home() / ".cache" / "triton_mps"))
    folders = [("triton-mps", ours)]
    try:
        from triton import knobs

        folders.append(("triton", Path(knobs.cache.dir)))
    except Exception:
        pass
    problems = [f"{label} {path}: {err}" for label, path in folders if (err := _writable(path)) is not None]
    if problems:
        return Check("cache dirs", "FAIL", "; ".join(problems),
                     "make it writable, or point TRITON_MPS_CACHE_DIR / TRITON_CACHE_DIR elsewhere", required=True)
    return Check("cache dirs", "PASS", ", ".join(f"{label} {path}" for label, path in folders) + " writable",
                 required=True)


CHECKS: list[Callable[[], Check]] = [check_os, check_core, check_device, check_metal, check_sim_toolchain,
                                     check_kernel_run, check_torch, check_triton, check_mlx, check_cache_dirs]


def run_checks() -> list[Check]:
    return [c() for c in CHECKS]


def format_line(c: Check) -> str:
    line = f"{c.status:<4}  {c.name:<20} {c.detail}"
    if c.status != "PASS" and c.fix:
        line += f"\n      {'':<20} -> {c.fix}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triton_mps check", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    args = parser.parse_args(argv)
    checks = run_checks()
    failed = [c for c in checks if c.status == "FAIL" and c.required]
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        for c in checks:
            print(format_line(c))
        summary = f"{sum(c.status == 'PASS' for c in checks)} passed, {sum(c.status == 'WARN' for c in checks)} " \
                  f"warnings, {sum(c.status == 'FAIL' for c in checks)} failed"
        print(("FAILED: " if failed else "ready: ") + summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
