"""Benchmark children (bench_inductor_compile.py, bench_autotune.py): `run` one in a fresh process
and read its result; inside it, `install` times a Triton compile's stages and the pipeline builds
the launching thread waits for, into a dict of seconds:

  frontend  Triton's AST -> TTIR and its TTIR and TTGIR passes (make_ir, make_ttir, make_ttgir)
  msl       our TTGIR -> MSL (make_msl)
  build     waiting for a pipeline: in load_binary, or at a deferred kernel's first launch (the
            simulator's, backend/device.py build_at_launch), counted once either way
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable


def run(argv: list[str], env: dict[str, str], cwd: str | None = None) -> dict:
    """Run a child that prints `RESULT <json>`; its result, or SystemExit with its output."""
    r = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=cwd)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if r.returncode != 0 or line is None:
        raise SystemExit(f"benchmark child failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}")
    return json.loads(line[len("RESULT "):])


def install(spent: dict[str, float], frontend: str, msl: str, build: str) -> None:
    """Wrap the compiler's stages and the driver's builds so that their time adds to `spent`."""
    import triton_mps.backend.device as tmps_device
    from triton.compiler.compiler import ASTSource
    from triton_mps.backend.compiler import MPSBackend
    from triton_mps.backend.device import MPSUtils

    def timed(key: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
        return wrapper

    ASTSource.make_ir = timed(frontend, ASTSource.make_ir)
    real_add_stages = MPSBackend.add_stages

    def add_stages(self, stages, options, language):
        real_add_stages(self, stages, options, language)
        for name, key in (("ttir", frontend), ("ttgir", frontend), ("msl", msl)):
            stages[name] = timed(key, stages[name])

    MPSBackend.add_stages = add_stages
    loading = threading.local()
    real_load_binary = MPSUtils.load_binary

    def load_binary(*args, **kwargs):
        loading.on = True
        try:
            return real_load_binary(*args, **kwargs)
        finally:
            loading.on = False

    MPSUtils.load_binary = timed(build, load_binary)
    if hasattr(tmps_device, "build_at_launch"):  # absent before deferred builds (issue 19)
        real_build_at_launch = tmps_device.build_at_launch
        timed_build_at_launch = timed(build, real_build_at_launch)

        def build_at_launch(*args, **kwargs):
            fn = real_build_at_launch if getattr(loading, "on", False) else timed_build_at_launch
            return fn(*args, **kwargs)

        tmps_device.build_at_launch = build_at_launch
