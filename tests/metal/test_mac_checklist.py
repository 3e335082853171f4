"""The rows of docs/mac-checklist.md that a test can settle, on a real Apple GPU (marker `mac`).

They skip, with the reason, off a Mac and on a VM's paravirtual GPU (GitHub's hosted macOS
runners: `apple_gpu_skip_reason` in tests/conftest.py); the self-hosted Mac job of
.github/workflows/mac-hardware.yml runs them with TMPS_REQUIRE_APPLE_GPU=1, where a missing GPU
is an error. Each test names its checklist row. Rows settled by Triton-level tests run in that
job's Metal pass of tests/triton instead (the checklist lists which).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import triton_mps
from triton_mps import _core, chips, selftest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.mac

# An MSL 3.2 API outside any version guard: Metal must accept it at 3.2 and reject it below.
DEVICE_FENCE = """#include <metal_stdlib>
using namespace metal;
kernel void fenced(device atomic_uint* counter [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
  atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
}
"""

ADD1 = """
kernel void add1(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i] = x[i] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def metal() -> Any:
    return triton_mps.get_device("metal")


def _macos_major() -> int:
    return int(platform.mac_ver()[0].split(".")[0] or 0)


def _selftest(check: Any, dev: Any) -> str:
    """One selftest check as a test: its own skip (no torch, no MPS) becomes pytest's."""
    try:
        return check(dev)
    except selftest._Skip as e:
        pytest.skip(str(e))


def test_cross_threadgroup_acquire_release_ordering(metal: Any) -> None:
    """Row "Cross-threadgroup ordering of acquire/release atomics": the selftest's last-block
    reduction, 20 runs; any stale partial fails. Below MSL 3.2 (macOS 14) there is no device-scope
    fence, and a failure is the documented limit (docs/msl-versions.md)."""
    try:
        print(selftest.check_last_block(metal))
    except AssertionError as e:
        if metal.info.get("msl_version", "3.1") < "3.2":
            pytest.xfail(f"documented MSL 3.1 limit (no device-scope fence): {e}")
        raise


def test_device_scope_fence_compiles_at_msl_32_only(metal: Any) -> None:
    """Row "`atomic_thread_fence(mem_device, seq_cst, thread_scope_device)` compiles under MSL
    3.2": Metal's compiler accepts it at 3.2 (macOS 15+) and rejects it at 3.1, as the
    simulator's shim does."""
    with pytest.raises(triton_mps.CompileError):
        triton_mps.compile_msl(DEVICE_FENCE, "fenced", metal, language_version="3.1", strict=False)
    if metal.info.get("msl_version", "3.1") < "3.2":
        pytest.skip(f"MSL {metal.info.get('msl_version')} (macOS {platform.mac_ver()[0]}): 3.2 needs macOS 15")
    k = triton_mps.compile_msl(DEVICE_FENCE, "fenced", metal, language_version="3.2")
    counter = np.zeros(1, np.uint32)
    k(counter, grid=64, threads=256)
    metal.synchronize()
    assert counter[0] == 64 * 256


def test_large_threadgroups_register_heavy_limits(metal: Any) -> None:
    """Row "`maxTotalThreadsPerThreadgroup` ... with the descriptor hint": 512 and 1,024-thread
    pipelines (num_warps 16/32) build with the hint, report their limit and run every thread."""
    detail = selftest.check_large_threadgroups(metal)
    print(detail)
    limits = [int(v) for v in re.findall(r"\d+", detail)]
    assert len(limits) == 2 and all(v >= 32 for v in limits), detail


def test_torch_mps_tensors_ordered_with_torchs_queue(metal: Any) -> None:
    """Row "torch `mps` tensors": storage pointer = MTLBuffer, written by torch just before our
    kernel (the selftest's check), with a storage offset."""
    print(_selftest(selftest.check_torch_mps, metal))


@pytest.mark.timeout(120)  # a hang in torch.mps.synchronize() fails here instead of stalling the job
def test_torch_coalesced_encoder_ended_before_our_launch(metal: Any) -> None:
    """Row "PyTorch's coalesced encoder ended before our launch" for the installed torch: both
    `at::mps` symbols resolve from libtorch_cpu.dylib, and `torch.sin` -> our kernel ->
    `torch.mps.synchronize()` gives the right values without hanging. The job's matrix runs it on
    a torch before 2.9 and a current one."""
    torch = pytest.importorskip("torch")
    if not torch.backends.mps.is_available():
        pytest.skip("torch without MPS")
    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.dylib"
    symbols = _core.torch_mps_api_symbols(str(lib))
    print(torch.__version__, symbols)
    assert all(symbols.values()), symbols
    k = triton_mps.compile_msl(ADD1, "add1", metal)
    x = torch.linspace(-3, 3, 10_000, device="mps")
    y = torch.sin(x)  # a native op: its encoder is left open (kernel coalescing)
    out = torch.full_like(y, float("nan"))
    k(y, out, 10_000, grid=40, threads=256)
    torch.mps.synchronize()
    torch.testing.assert_close(out.cpu(), torch.sin(x.cpu()) + 1, rtol=1e-5, atol=1e-5)


def test_host_memory_wrapped_page_rounded(metal: Any) -> None:
    """Row "Host memory (numpy, CPU tensors) wrapped page-rounded with newBufferWithBytesNoCopy":
    the selftest's numpy and (unaligned) torch CPU checks."""
    print(selftest.check_numpy_and_pool(metal))
    print(_selftest(selftest.check_torch_cpu, metal))


def test_binary_archive_across_processes(tmp_path: Path) -> None:
    """Row "Binary archive (pipeline cache on disk) across processes": a first process writes the
    archive at exit, a second one opens it and builds and runs the same kernel. (Whether the
    second build was an archive hit is not exposed: that part stays manual.)"""
    script = textwrap.dedent(f"""
        import numpy as np, triton_mps
        dev = triton_mps.get_device("metal")
        k = triton_mps.compile_msl({ADD1!r}, "add1", dev)
        x = np.arange(1000, dtype=np.float32); y = np.zeros(1000, np.float32)
        k(x, y, 1000, grid=4, threads=256); dev.synchronize()
        assert np.array_equal(y, x + 1)
    """)
    env = {**os.environ, "TRITON_MPS_CACHE_DIR": str(tmp_path / "cache")}
    for run in range(2):
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"run {run}: {r.stderr[-3000:]}"
        archives = list((tmp_path / "cache").rglob("*.metallib-archive"))
        assert archives and all(a.stat().st_size > 0 for a in archives), sorted((tmp_path / "cache").rglob("*"))


def test_generation_and_core_count_from_device_name(metal: Any) -> None:
    """Row "The generation and core count from the device name": the generation parsed from
    `MTLDevice.name` matches the name, the family is apple7+, and the GPU core count macOS reports
    is at most the chip table's (its largest configuration)."""
    info = metal.info
    print(info)
    m = re.search(r"\bM(\d+)\b", info["name"])
    assert m, info["name"]
    assert info["generation"] == int(m.group(1)), info
    assert int(info["gpu_family"].removeprefix("apple")) >= 7, info
    chip = chips.chip_of(info["name"])
    assert chip is not None, f"{info['name']!r} is not in triton_mps.chips"
    report = subprocess.run(["system_profiler", "SPDisplaysDataType", "-json"], capture_output=True, text=True,
                            timeout=60).stdout
    cores = [int(gpu["sppci_cores"]) for gpu in json.loads(report or "{}").get("SPDisplaysDataType", [])
             if str(gpu.get("sppci_cores", "")).isdigit()]
    print(f"{info['name']}: macOS reports {cores} GPU cores, the table {chip.gpu_cores}")
    if not cores:
        pytest.skip("system_profiler did not report a GPU core count")
    assert cores[0] <= chip.gpu_cores


def test_macos_13_message_names_macos_14(metal: Any) -> None:
    """Row "The macOS version check (`MSL 3.1 needs macOS 14`)": on macOS 13 any kernel gives the
    message naming macOS 14."""
    if _macos_major() != 13:
        pytest.skip(f"needs macOS 13 (this is macOS {platform.mac_ver()[0]})")
    with pytest.raises(triton_mps.Unavailable, match="macOS 14"):
        triton_mps.compile_msl(ADD1, "add1", metal)


@pytest.mark.timeout(900)
def test_torch_compile_example_on_mps() -> None:
    """Row "`torch.compile` on `mps` tensors through `triton_mps.inductor.enable()`": the example
    (forward and gradients against float64 eager, launches counted) exits 0. (The comparison
    with PyTorch's own Metal code generation stays manual.)"""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.backends.mps.is_available():
        pytest.skip("torch without MPS")
    r = subprocess.run([sys.executable, str(REPO / "examples" / "torch_compile_example.py")], capture_output=True,
                       text=True, timeout=850, cwd=REPO)
    print(r.stdout[-4000:])
    assert r.returncode == 0, r.stderr[-4000:]
