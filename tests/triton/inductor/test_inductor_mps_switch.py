"""`triton_mps.inductor.enable()`: Inductor's Triton code generation for `mps` tensors (issue 19,
item 2), as far as Linux allows.

Linux has no `mps` tensors, so nothing runs here; what does: the registration and its undoing,
and Inductor's whole compile of a graph on (fake) `mps` tensors -- its Triton kernels for device
type `mps` compiled by our backend to MSL for our target, and the wrapper code that would launch
them. Running them is on docs/mac-checklist.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch._inductor")
# Nothing here depends on the device: run once, in the default-device pass (scripts/test.sh).
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_MPS_DEVICE", "").lower() in ("metal-emu", "emu", "emulated"),
                                reason="registration and compile only: runs in the default-device pass")


def test_enable_and_disable_registrations():
    code = """
        import torch
        import triton_mps.inductor as ti
        from torch._dynamo import device_interface as di
        from torch._inductor.codegen import common
        common.init_backend_registration()
        before = common.get_scheduling_for_device("mps"), di.get_interface_for_device("mps")
        ti.enable(mps=True)
        print("on", ti.enabled_devices(), common.get_scheduling_for_device("mps").__name__,
              di.get_interface_for_device("mps").get_compute_capability(),
              common.get_device_op_overrides("mps").import_get_raw_stream_as("s"))
        import torch._inductor.config as config
        assert config.cpu_backend == "triton"
        ti.disable()
        after = common.get_scheduling_for_device("mps"), di.get_interface_for_device("mps")
        print("off", ti.enabled_devices(), after == before, config.cpu_backend)
    """
    out = _run(code)
    assert "on ['cpu', 'mps'] TritonScheduling" in out
    assert "from triton_mps.inductor import get_raw_stream as s" in out
    assert "off [] True cpp" in out


def test_mps_graph_compiles_to_msl(tmp_path):
    code = """
        import torch
        import triton_mps.inductor as ti
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch._inductor.compile_fx import compile_fx_inner
        from torch._inductor.decomposition import select_decomp_table
        from torch._inductor import config
        from triton_mps.backend import compiler as mps_compiler

        ti.enable(mps=True)
        msl = []
        real = mps_compiler.MPSBackend.add_stages

        def add_stages(self, stages, options, language):
            real(self, stages, options, language)
            make_msl = stages["msl"]
            stages["msl"] = lambda src, metadata: msl.append(make_msl(src, metadata)) or msl[-1]

        mps_compiler.MPSBackend.add_stages = add_stages

        def fn(x, w):
            return (torch.softmax(x * w - 3.75, -1).sum(0),)

        mode = FakeTensorMode()
        x = FakeTensor(mode, torch.empty(32, 100, device="meta"), torch.device("mps"))
        w = FakeTensor(mode, torch.empty(100, device="meta"), torch.device("mps"))
        with mode:
            gm = make_fx(fn, decomposition_table=select_decomp_table())(x, w)
        with mode, config.patch(compile_threads=1):
            compiled = compile_fx_inner(gm, [x, w])
        src = open(compiled.current_callable.__code__.co_filename).read() if hasattr(
            compiled, "current_callable") else ""
        print("kernels", len(msl), all("kernel void" in m for m in msl))
        print("mps-device", "type='mps'" in src, "set_driver_to_gpu" in src,
              "from triton_mps.inductor import get_raw_stream" in src)
    """
    out = _run(code, tmp_path)
    n = int(out.split("kernels ")[1].split()[0])
    assert n >= 1 and f"kernels {n} True" in out, out
    assert "mps-device True True True" in out, out


def _run(code: str, tmp_path=None) -> str:
    env = dict(os.environ)
    env["TRITON_BACKEND"] = "mps"
    if tmp_path is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
        env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-8000:]
    return r.stdout
