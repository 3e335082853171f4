"""Out-of-bounds accesses on Metal through Metal's shader validation (TRITON_MPS_METAL_VALIDATION=1),
tested end to end on the emulated Metal device: our real Metal code sets MTL_SHADER_VALIDATION
and MTL_DEBUG_LAYER before the first device exists, asks command buffers for encoder status,
labels each dispatch's pass with its kernel, and turns the command buffer's error and shader
validation logs (MTLFunctionLog) into a DispatchError naming the kernel, the MSL line and the
Triton line. The emulation (csrc/metal_emu/RULES.md) instruments pipelines with the simulator's
memcheck when MTL_SHADER_VALIDATION is set at device creation and reports what Metal reports.

Metal reads its switches once per process, so the mode runs in a child process
(tests/metal/metal_validation_child.py, one run for every check: ~5 s with warm kernel caches).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import triton_mps
from triton_mps import _core

pytestmark = pytest.mark.skipif(not hasattr(_core, "emu_stats"), reason="built without the emulated Metal device")

CHILD = Path(__file__).with_name("metal_validation_child.py")
VALIDATION = "Metal shader validation (TRITON_MPS_METAL_VALIDATION): "
INVALID_RESOURCE = "Metal command buffer failed: Invalid Resource"


@pytest.fixture(scope="module")
def report() -> dict:
    env = dict(os.environ, TRITON_MPS_DEVICE="metal-emu", TRITON_MPS_METAL_VALIDATION="1", TRITON_BACKEND="mps")
    for name in ("MTL_SHADER_VALIDATION", "MTL_DEBUG_LAYER"):
        env.pop(name, None)
    run = subprocess.run([sys.executable, str(CHILD)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_mode_turns_on_metals_switches(report):
    assert report["device"].endswith("(emulated)")
    assert report["env"] == {"MTL_SHADER_VALIDATION": "1", "MTL_DEBUG_LAYER": "1"}


@pytest.mark.parametrize("kernel, kind", [("store_next", "store"), ("load_next", "load")])
def test_msl_off_by_one_names_kernel_and_line(report, kernel, kind):
    msg = report[kernel]
    assert msg is not None, "an off-by-one access past a Metal buffer was not reported"
    assert msg.startswith(f"kernel '{kernel}': {VALIDATION}"), msg
    # Metal's own description: the access, the kernel function, the encoder (labelled with the
    # kernel) and the offset in the buffer (256 floats = 1024 bytes).
    assert f'Invalid device {kind} executing kernel function "{kernel}" encoder: "{kernel}", dispatch: 0' in msg
    assert "at offset 1024" in msg
    assert f"MSL line {report['msl_lines'][kernel]}" in msg
    assert INVALID_RESOURCE in msg


@pytest.mark.parametrize("kernel, kind, line", [("shifted_store", "store", "store"), ("shifted_load", "load", "load")])
def test_triton_off_by_one_names_kernel_and_triton_line(report, kernel, kind, line):
    msg = report["triton_" + kind]
    assert msg is not None, "an off-by-one access past a Metal buffer was not reported"
    assert msg.startswith(f"kernel '{kernel}': {VALIDATION}Invalid device {kind}"), msg
    assert "at offset 16384" in msg  # 4096 floats: one element past the tensor's last page
    # The MSL line, mapped through the compiler's `// @ file.py:line` marks to the Triton line.
    assert f"(metal_validation_child.py:{report['triton_lines'][line]})" in msg, msg
    assert "MSL line " in msg


def test_launch_on_pytorchs_stream_is_reported(report):
    # `mps` tensors: our dispatch is encoded into PyTorch's command buffer; its logs are read too.
    msg = report["torch_stream"]
    assert msg is not None
    assert msg.startswith(f"kernel 'torch_store_next': {VALIDATION}Invalid device store"), msg
    assert "at offset 1024, MSL line 5" in msg
    assert "Metal command buffer of PyTorch's MPS stream failed: Invalid Resource" in msg


def test_in_bounds_launches_are_unaffected_and_the_process_stays_usable(report):
    for key in ("store_next_in_bounds", "load_next_in_bounds", "triton_in_bounds", "torch_stream_in_bounds",
                "pool_after"):
        assert report[key] is None, (key, report[key])
    assert report["msl_result_ok"] and report["triton_result_ok"]
    assert report["violations"] == []
    assert report["live_logs"] == {}  # every MTLFunctionLog, container and location was released


def test_validation_checks_metal_buffers_not_tensors(report):
    # Metal knows the buffer it was given: host memory is wrapped in whole 16 KiB pages, so an
    # overrun that stays inside the tensor's last page is not reported, in the mode or not.
    assert report["inside_page"] is None
    assert report["inside_page_wrote_past"]


def test_without_the_mode_an_overrun_is_not_reported():
    # This process made its emulated device without MTL_SHADER_VALIDATION: no logs are read, and
    # an overrun inside the Metal buffer really happens (undefined behaviour on a Mac).
    if os.environ.get("MTL_SHADER_VALIDATION", "0") != "0" or os.environ.get("TRITON_MPS_METAL_VALIDATION"):
        pytest.skip("this process runs with shader validation on")
    emu = triton_mps.get_device("metal-emu")
    k = triton_mps.compile_msl(
        """
kernel void store_next(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i + 1] = x[i];
}""",
        "store_next",
        emu,
    )
    x = np.arange(1, 33, dtype=np.float32)
    raw = np.full(64, np.nan, np.float32)
    k(x, raw[:32], 32, grid=1, threads=32)
    emu.synchronize()
    assert raw[32] == 32.0  # written past the 32-element array
    assert np.array_equal(raw[1:32], x[:31])
    # Past the Metal buffer, the emulated GPU faults (as a Mac may), but no validation log is read.
    xb, yb = emu.buffer(1024), emu.buffer(1024)  # 256 floats: exactly the Metal buffer
    with pytest.raises(triton_mps.DispatchError) as info:
        k(xb, yb, 256, grid=8, threads=32)
        emu.synchronize()
    assert "Metal shader validation" not in str(info.value)
    k(xb, yb, 255, grid=8, threads=32)
    emu.synchronize()
