"""torch.compile in half precision through triton-mps (issue 28, item 2).

Inductor's `get_current_backend()` answers "mps" for `mps` tensors even with Triton code
generation registered there, and `upcast_compute_type()` computes fp16/bf16 in float32 only for
"triton": a looped reduction got a half accumulator re-assigned float32 values, which Triton
rejects. `triton_mps.inductor.enable()` corrects the answer for `mps` while enabled.

- The answer and its undoing by `disable()`.
- fp16 and bf16 graphs with long rows (layer norm, RMSNorm, softmax, cross-entropy, a transformer
  block; forward and backward) compile for (fake) `mps` tensors on Linux: looped reductions,
  float32 accumulators, and Inductor's runtime dtype/shape/NaN asserts in every kernel.
- The same graphs run on CPU tensors through triton-mps (`cpu_backend="triton"`), forward and
  backward, against float64 eager; on a Mac (the `mac` marker) also on `mps` tensors.

Graphs and drivers: half_graphs.py. Each test runs in a process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch._inductor")
# Code generation is the same on every device: run once, in the default-device pass (scripts/test.sh).
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"),
                                reason="half-precision Inductor graphs: run in the default-device pass")

HERE = Path(__file__).parent
DTYPES = ["float16", "bfloat16"]


def _run(code: str, tmp_path: Path) -> str:
    env = dict(os.environ)
    env["TRITON_BACKEND"] = "mps"
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
    code = f"import sys; sys.path.insert(0, {str(HERE)!r})\n" + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    return r.stdout


def test_mps_backend_answer_and_disable(tmp_path):
    out = _run("""
        import types
        import torch
        import torch._inductor.config as config
        from torch._inductor import utils
        from torch._inductor.codegen import common
        from torch._inductor.virtualized import V
        import triton_mps.inductor as ti

        original = utils.get_current_backend
        mps_graph = types.SimpleNamespace(get_current_device_or_throw=lambda: torch.device("mps"))

        def state(tag):
            with V.set_graph_handler(mps_graph):
                upcast = [utils.upcast_compute_type(t) for t in (torch.float16, torch.bfloat16)]
            print(tag, utils.get_current_backend("mps"), common.get_current_backend("mps"),
                  utils.get_current_backend("cuda") == config.cuda_backend,
                  utils.get_current_backend("xpu") == config.xpu_backend, upcast)

        state("before")
        ti.enable(mps=False)
        state("cpu-only")
        print("cpu", utils.get_current_backend("cpu"))
        ti.enable(mps=True)
        ti.enable(mps=True)  # a second enable() changes nothing
        state("enabled")
        held = utils.get_current_backend  # as a module importing the name now would hold it
        ti.disable()
        state("disabled")
        print("restored", utils.get_current_backend is original, common.get_current_backend is original,
              held("mps"))
    """, tmp_path)
    half = "[torch.float16, torch.bfloat16]"
    assert f"before mps mps True True {half}" in out, out
    assert f"cpu-only mps mps True True {half}" in out, out  # CPU tensors only: mps untouched
    assert "cpu triton" in out, out
    assert "enabled triton triton True True [torch.float32, torch.float32]" in out, out
    assert f"disabled mps mps True True {half}" in out, out
    assert "restored True True mps" in out, out  # a wrapper held past disable() answers as Inductor


@pytest.mark.parametrize("dtype", DTYPES)
def test_half_graphs(tmp_path, dtype, rng):
    # One process per dtype (each costs an import of torch and Inductor): first every graph
    # compiled for `mps`, then every graph run on CPU tensors.
    seed = int(rng.integers(2**31))
    out = _run(f"""
        import torch
        import torch._inductor.config as config
        import triton_mps
        import triton_mps.inductor as ti
        import half_graphs as hg

        ti.enable(mps=True)
        failed = []
        for name in hg.CASES:
            try:
                src, seconds = hg.timed(lambda: hg.compile_on_fake_mps(name, torch.{dtype}))
                print("mps", hg.check_mps_code(name, src), f"{{seconds:.1f}} s", flush=True)
            except Exception as e:  # every graph's failure, not only the first
                failed.append(f"{{name}}: {{hg.summary(e)}}")

        config.compile_threads = 1
        torch.manual_seed({seed})
        tol = hg.TOLERANCE[torch.{dtype}]
        for name in hg.CASES:
            with triton_mps.profile() as prof:
                errors, seconds = hg.timed(lambda: hg.run_compiled(name, torch.{dtype}))
            print("cpu", name, "errors", " ".join(f"{{e:.1e}}" for e in errors), "launches", len(prof),
                  f"{{seconds:.1f}} s", flush=True)
            assert len(prof) > 0, name
            assert max(errors) <= tol, (name, errors, tol)
        print("all within", tol)
        assert not failed, "compiling for mps failed: " + " | ".join(failed)
    """, tmp_path)
    print(out)
    assert out.count("mps ") == 5 and "all within" in out, out
    cpu_code = [p.read_text() for p in (tmp_path / "inductor").rglob("*.py")]
    assert any("for r0_offset in " in c and "type='cpu'" in c for c in cpu_code), "no looped CPU reduction"


@pytest.mark.mac
@pytest.mark.parametrize("dtype", DTYPES)
def test_half_graphs_on_mps(tmp_path, dtype, rng):
    """The same graphs on `mps` tensors, run by the GPU (the self-hosted Mac job)."""
    seed = int(rng.integers(2**31))
    out = _run(f"""
        import torch
        import triton_mps
        import triton_mps.inductor as ti
        import half_graphs as hg

        ti.enable(mps=True)
        torch.manual_seed({seed})
        tol = hg.TOLERANCE[torch.{dtype}]
        for name in hg.CASES:
            with triton_mps.profile() as prof:
                errors = hg.run_compiled(name, torch.{dtype}, "mps")
            print("mps", name, "errors", " ".join(f"{{e:.1e}}" for e in errors), "launches", len(prof), flush=True)
            assert len(prof) > 0, name
            assert max(errors) <= tol, (name, errors, tol)
        print("all within", tol)
    """, tmp_path)
    print(out)
    assert "all within" in out, out
