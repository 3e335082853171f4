"""Inductor's `cpu_backend="triton"` through the mps backend, with no patch (issue 19, item 1).

Each case runs in a fresh process: the `cpu` alias is registered while Triton discovers its
backends, so it depends on the environment at `import triton`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch._inductor")


def _run(code: str, tmp_path, backend: str | None = "mps", timeout: int = 600) -> str:
    env = dict(os.environ)
    env.pop("TRITON_BACKEND", None)
    if backend is not None:
        env["TRITON_BACKEND"] = backend
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_cpu_alias_only_when_selected(tmp_path):
    code = """
        import triton.backends as tb
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        print(sorted(tb.backends))
        if "cpu" in tb.backends:
            b = make_backend(GPUTarget("cpu", 0, 32))
            print(type(b).__name__, b.target.backend, b.hash().endswith(str(b.target.arch)))
    """
    assert "'cpu'" in _run(code, tmp_path)
    assert "MPSCpuTargetBackend mps True" in _run(code, tmp_path)  # our arch, in the cache key
    assert "'cpu'" not in _run(code, tmp_path, backend=None)  # never taken without being asked
    assert "'cpu'" not in _run(code, tmp_path, backend="cuda")


def test_a_real_cpu_backend_keeps_its_name(tmp_path):
    # triton-cpu discovered before us: we leave the name alone; after us: it replaces the alias,
    # which then claims nothing.
    out = _run("""
        import triton.backends as tb
        from triton.backends import Backend
        from triton.backends.compiler import GPUTarget
        from triton_mps.backend import inductor_cpu
        from triton_mps.backend.compiler import MPSBackend
        from triton_mps.backend.driver import MPSDriver

        class OtherCpu(MPSBackend):
            pass

        table = tb.backends
        assert table["cpu"].compiler is inductor_cpu.MPSCpuTargetBackend
        table["cpu"] = Backend(compiler=OtherCpu, driver=MPSDriver)
        print("claims", inductor_cpu.claims_cpu_target(),
              inductor_cpu.MPSCpuTargetBackend.supports_target(GPUTarget("cpu", 0, 32)))
        print("registered", inductor_cpu.register_cpu_alias(), table["cpu"].compiler is OtherCpu)
    """, tmp_path)
    assert "claims False False" in out
    assert "registered False True" in out


MODEL = """
    import warnings
    warnings.simplefilter("error", UserWarning)  # "Could not find an active CPU backend" included
    import torch
    import torch._inductor.config as cfg
    import triton_mps
    cfg.cpu_backend = "triton"
    cfg.compile_threads = {threads}

    def fn(x, w, b, idx):
        y = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)
        y = torch.softmax(torch.nn.functional.gelu(y), -1) * 2.5 - 3.75   # x*y - (negative c)
        return y.cumsum(-1)[idx] + y.sum(0, keepdim=True)[0]

    torch.manual_seed(0)
    x, w, b = torch.randn(37, 100), torch.randn(100), torch.randn(100)
    idx = torch.randint(0, 37, (53,))
    with triton_mps.profile() as prof:
        out = torch.compile(fn)(x, w, b, idx)
    ref = fn(x.double(), w.double(), b.double(), idx)
    err = (out.double() - ref).abs().max().item()
    launches = len(prof)  # launches that went through our launcher
    print("err", err, "launches", launches)
    assert err < 1e-4, err
    assert launches > 0
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_torch_compile_on_cpu_tensors(tmp_path, threads):
    if threads > 1 and os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"):
        pytest.skip("compile workers: the default-device pass covers them")
    out = _run(MODEL.format(threads=threads), tmp_path)
    assert "launches" in out
