"""Kernels that need MSL 3.2 API (device-scope fences) compile for the oldest supported macOS
(14, MSL 3.1) too (issue 18 items 3 and 4): every 3.2-only construct in emitted MSL is guarded by
`#if __METAL_VERSION__ >= 320`, and a kernel compiled below 3.2 warns that ordering between
threadgroups is not guaranteed (docs/msl-versions.md). CI runs tests/triton on the emulated
Metal device as macOS 14, where the simulator compiles every kernel at MSL 3.1 with 3.2 API
hidden; the last test here does that for this file alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from tmps_testing import unguarded_msl32


@triton.jit
def _add64_relaxed(ptr, vals, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(ptr + offs % 3, tl.load(vals + offs, mask=m), mask=m, sem="relaxed")


@triton.jit
def _poll_acquire(flag, out):
    tl.atomic_poll(flag, 5, sem="acquire")
    tl.store(out, 7)


@triton.jit
def _last_block_sum(x, partial, counter, out, n_blocks, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(partial + pid, tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))
    if tl.atomic_add(counter, 1, sem="acq_rel") == n_blocks - 1:
        tl.store(out, tl.sum(tl.load(partial + tl.arange(0, 16)), axis=0))


def _run_and_check(name, dev):
    if name == "add64_relaxed":
        vals = torch.randint(1, 2**40, (100,), dtype=torch.int64)
        acc = torch.zeros(3, dtype=torch.int64, device=dev)
        k = _add64_relaxed[(4,)](acc, vals.to(dev), 100, BLOCK=128)
        want = torch.stack([vals[i::3].sum() for i in range(3)]) * 4
        assert torch.equal(acc.cpu(), want)
    elif name == "poll_acquire":
        flag = torch.tensor([5], dtype=torch.int64, device=dev)
        out = torch.zeros(1, dtype=torch.int64, device=dev)
        k = _poll_acquire[(3,)](flag, out)
        assert out.item() == 7
    else:
        x = torch.randn(16 * 64)
        partial = torch.full((16,), float("nan"), device=dev)
        counter = torch.zeros(1, dtype=torch.int32, device=dev)
        out = torch.full((1,), float("nan"), device=dev)
        k = _last_block_sum[(16,)](x.to(dev), partial, counter, out, 16, BLOCK=64)
        torch.testing.assert_close(out.cpu()[0], x.double().sum().float(), rtol=1e-4, atol=1e-3)
    return k


@pytest.mark.parametrize("name", ["add64_relaxed", "poll_acquire", "last_block_sum"])
def test_device_fenced_kernels_compile_and_run_at_every_version(mps_driver, name):
    dev = mps_driver.get_active_torch_device()
    msl_version = triton_mps.get_device().info["msl_version"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = _run_and_check(name, dev)
    msl = k.asm["msl"]
    assert "TMPS_DEVICE_FENCE();" in msl  # each one asks for ordering between threadgroups
    assert unguarded_msl32(msl) == []
    assert uncoherent_pointers(msl) == []
    # Below MSL 3.2 the fences compile to nothing, and the user is told so.
    unordered = [w for w in caught if "no device-scope memory fence" in str(w.message)]
    assert bool(unordered) == (msl_version < "3.2")
    # And at 3.1 on the simulator, whatever this device is (its shim hides the 3.2 API there).
    triton_mps.compile_msl(msl, k.name, triton_mps.get_device("sim"), language_version="3.1")


def uncoherent_pointers(msl: str) -> list[str]:
    """Device pointer types in the kernel (signature and body) not declared TMPS_COHERENT, other
    than the hidden debug and lock buffers and atomic objects (always coherent)."""
    kernel = msl[msl.index("kernel void"):]
    found = re.findall(r"(?:TMPS_COHERENT )?device (?:const )?\w+\*", kernel)
    return [p for p in found if not p.startswith("TMPS_COHERENT") and "atomic_" not in p and "device uint*" != p]


def test_fenced_kernel_buffers_are_coherent_at_3_2(mps_driver):
    """Plain loads after an acquire see other threadgroups' stores only through coherent(device)
    pointers (MSL 3.2): every buffer of a fenced kernel is declared so, guarded for 3.1."""
    dev = mps_driver.get_active_torch_device()
    k = _run_and_check("last_block_sum", dev)
    msl = k.asm["msl"]
    guard = "#if __METAL_VERSION__ >= 320\n#define TMPS_COHERENT coherent(device)\n#else\n#define TMPS_COHERENT\n#endif"
    assert guard in msl and msl.index(guard) < msl.index("kernel void")
    params = re.findall(r"(TMPS_COHERENT device \w+\*|device \w+\*) arg\d+", msl)
    assert params == ["TMPS_COHERENT device float*"] * 2 + ["TMPS_COHERENT device int*", "TMPS_COHERENT device float*"]
    assert uncoherent_pointers(msl) == []


@triton.jit(noinline=True)
def _sum16(p, out):
    tl.store(out, tl.sum(tl.load(p + tl.arange(0, 16)), axis=0))


@triton.jit
def _last_block_sum_call(partial, counter, out, n_blocks):
    pid = tl.program_id(0)
    tl.store(partial + pid, pid.to(tl.float32))
    if tl.atomic_add(counter, 1, sem="acq_rel") == n_blocks - 1:
        _sum16(partial, out)


def test_noinline_function_parameters_are_coherent(mps_driver):
    """A noinline function reading partials in the last block gets coherent pointers too."""
    dev = mps_driver.get_active_torch_device()
    partial = torch.zeros(16, device=dev)
    counter = torch.zeros(1, dtype=torch.int32, device=dev)
    out = torch.zeros(1, device=dev)
    k = _last_block_sum_call[(16,)](partial, counter, out, 16)
    assert out.item() == sum(range(16))
    msl = k.asm["msl"]
    callee = re.search(r"\n(\w+ \w*_sum16\w*\(.*?)\) \{", msl)
    assert callee is not None, msl
    assert "TMPS_COHERENT device float* p0" in callee.group(1) and "TMPS_COHERENT device float* p1" in callee.group(1)
    assert unguarded_msl32(msl) == []


@triton.jit
def _copy(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _count_relaxed(c):
    tl.atomic_add(c, 1, sem="relaxed")


def test_unfenced_kernels_have_no_coherent_pointers(mps_driver):
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(100, dtype=torch.float32, device=dev)
    y = torch.zeros_like(x)
    c = torch.zeros(1, dtype=torch.int32, device=dev)
    for k in (_copy[(2,)](x, y, 100, BLOCK=64), _count_relaxed[(3,)](c)):
        msl = k.asm["msl"]
        assert "TMPS_DEVICE_FENCE" not in msl and "TMPS_COHERENT" not in msl and "coherent" not in msl
        assert re.search(r"kernel void \w+\(device (int|float)\* arg0", msl)
    assert torch.equal(y.cpu(), x.cpu()) and c.item() == 3


def test_this_file_passes_on_emulated_macos_14():
    """The three kernels through the Metal host code on an emulated macOS 14 (MSL 3.1)."""
    if not any(d.is_emulated for d in triton_mps.devices()):
        pytest.skip("built without the emulated Metal device")
    if os.environ.get("TRITON_MPS_EMU_MACOS") == "14.0":
        pytest.skip("already running on emulated macOS 14")
    env = {**os.environ, "TRITON_MPS_DEVICE": "metal-emu", "TRITON_MPS_EMU_MACOS": "14.0"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "every_version or coherent"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parent)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 passed" in r.stdout, r.stdout
