"""The simulator's numerics do not depend on the host CPU.

Kernels are built for a fixed target CPU (never the host's native features): the same
conversion-heavy kernel built for different explicit targets (TRITON_MPS_SIM_CPU) must give
bit-identical results, including on targets whose hardware conversions differ from IEEE
(AVX512-BF16 flushes subnormals), and match an exact numpy reference.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import triton_mps

CONVERT = r"""
#include <metal_stdlib>
using namespace metal;

// Every conversion and rounding the shim or the CPU may implement: float -> half / bfloat
// (subnormals, ties, overflow, NaN payloads), back, and half/bfloat arithmetic and fma.
kernel void convert(const device uint* in [[buffer(0)]],
                    device ushort* to_half [[buffer(1)]],
                    device ushort* to_bf16 [[buffer(2)]],
                    device uint* from_half [[buffer(3)]],
                    device uint* from_bf16 [[buffer(4)]],
                    device ushort* half_ops [[buffer(5)]],
                    device ushort* bf16_ops [[buffer(6)]],
                    device uint* float_fma [[buffer(7)]],
                    uint i [[thread_position_in_grid]]) {
  float x = as_type<float>(in[i]);
  half h = half(x);
  bfloat b = bfloat(x);
  to_half[i] = as_type<ushort>(h);
  to_bf16[i] = as_type<ushort>(b);
  ushort bits = ushort(in[i] & 0xffffu);
  from_half[i] = as_type<uint>(float(as_type<half>(bits)));
  from_bf16[i] = as_type<uint>(float(as_type<bfloat>(bits)));
  half h2 = as_type<half>(ushort(in[i] >> 16));
  half_ops[i] = as_type<ushort>(half(fma(h, h2, h) * h2 + h / h2));
  bfloat b2 = as_type<bfloat>(ushort(in[i] >> 16));
  bf16_ops[i] = as_type<ushort>(bfloat(b * b2 + b2));
  float f2 = as_type<float>(in[(i * 7u + 3u) % 4096u]);
  float_fma[i] = as_type<uint>(fma(x, f2, x * 0.5f));
}
"""

N = 4096

CHILD = r"""
import sys
import numpy as np
import triton_mps

source, inputs, out = sys.argv[1], sys.argv[2], sys.argv[3]
dev = triton_mps.get_device("sim")
k = triton_mps.compile_msl(open(source).read(), "convert", dev)
x = np.load(inputs)
n = x.size
outs = [np.full(n, 0xABCD, np.uint16), np.full(n, 0xABCD, np.uint16), np.full(n, 0xDEADBEEF, np.uint32),
        np.full(n, 0xDEADBEEF, np.uint32), np.full(n, 0xABCD, np.uint16), np.full(n, 0xABCD, np.uint16),
        np.full(n, 0xDEADBEEF, np.uint32)]
k(x, *outs, grid=n // 64, threads=64)
dev.synchronize()
np.savez(out, *outs)
print(triton_mps._core.sim_toolchain()["target"])
"""


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(1234)
    special = [
        0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000,  # float subnormals, smallest normals
        0x33000000, 0x33000001, 0x337FFFFF, 0x33800000, 0x387FC000, 0x38800000,  # half subnormal edges
        0x477FEFFF, 0x477FF000, 0x477FF001, 0x7F7FFFFF, 0x7F800000, 0xFF800000,  # half overflow, inf
        0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA5A5A5, 0xFFBFFFFF,  # NaNs with payloads, signalling
        0x3F808000, 0x3F818000, 0x3F808001, 0x3F7F8000, 0x00008000, 0x00018000,  # bf16 ties (also subnormal)
        0x806DE47E, 0x00400000, 0x3F800000, 0xBF800000, 0x00000000, 0x80000000,
    ]
    x = rng.integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    # Many inputs in the subnormal and tie ranges, where hardware conversions differ.
    x[: N // 4] &= 0x807FFFFF
    x[N // 4 : N // 2] = (x[N // 4 : N // 2] & 0xFFFF0000) | 0x8000
    x[N // 2 : N // 2 + len(special)] = special
    return x


def _host_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def _targets() -> list[str]:
    flags = _host_flags()
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        out = ["x86_64"]
        if {"avx2", "fma", "f16c", "bmi2"} <= flags:
            out.append("x86_64_v3")
        if {"avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512_bf16"} <= flags:
            out.append("x86_64_v4+avx512bf16")  # hardware bf16 conversion: flushes subnormals
        return out
    if machine in ("aarch64", "arm64"):
        out = ["generic"]
        if "bf16" in flags:
            out.append("generic+bf16")
        return out
    return []


def _run(tmp_path: Path, target: str | None, opt: str = "auto") -> tuple[str, list[np.ndarray]]:
    src = tmp_path / "convert.metal"
    src.write_text(CONVERT)
    inputs = tmp_path / "inputs.npy"
    np.save(inputs, _inputs())
    name = (target or "default") + "-" + opt
    out = tmp_path / f"out-{name}.npz"
    env = dict(os.environ, TRITON_MPS_CACHE_DIR=str(tmp_path / f"cache-{name}"))
    env.pop("TRITON_MPS_SIM_CPU", None)
    env["TRITON_MPS_SIM_OPT"] = opt
    if target:
        env["TRITON_MPS_SIM_CPU"] = target
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(inputs), str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"target {name}:\n{r.stdout}\n{r.stderr}"
    with np.load(out) as z:
        return r.stdout.strip().splitlines()[-1], [z[f"arr_{i}"] for i in range(7)]


def _reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact float -> half (numpy, IEEE RNE) and float -> bfloat16 (RNE on the bits, NaN quieted)."""
    f = x.view(np.float32)
    with np.errstate(over="ignore"):
        h = f.astype(np.float16).view(np.uint16)
    u = x.astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (x & 0x7FFFFFFF) > 0x7F800000
    b = np.where(nan, ((x >> 16) | 0x40).astype(np.uint16), rounded)
    return h, b


def test_default_target_is_not_native(tmp_path):
    target, _ = _run(tmp_path, None)
    assert target in _targets(), f"default target {target!r} is not one of the fixed baseline targets"
    assert "native" not in target


def test_bits_identical_across_cpu_targets(tmp_path):
    targets = _targets()
    if len(targets) < 2:
        pytest.skip(f"this host runs only the baseline target ({targets}); nothing to compare")
    x = _inputs()
    want_half, want_bf16 = _reference(x)
    results = {t: _run(tmp_path, t)[1] for t in targets}
    base = results[targets[0]]
    # Only NaN payloads of half may legitimately differ from numpy's own conversion; ours keep them.
    finite = (x & 0x7FFFFFFF) <= 0x7F800000
    np.testing.assert_array_equal(base[0][finite], want_half[finite])
    np.testing.assert_array_equal(base[1], want_bf16)
    for t in targets[1:]:
        for i, (a, b) in enumerate(zip(base, results[t], strict=True)):
            diff = np.flatnonzero(a != b)
            assert diff.size == 0, (
                f"output {i}: target {t} differs from {targets[0]} at {diff.size} inputs, e.g. "
                f"x=0x{int(x[diff[0]]):08x}: 0x{int(b[diff[0]]):x} vs 0x{int(a[diff[0]]):x}")


def test_sim_toolchain_reports_target():
    t = triton_mps._core.sim_toolchain()
    assert t["target"] and t["target_flags"]
    assert not any("native" in f for f in t["target_flags"])


def test_quick_and_full_builds_give_the_same_bits(tmp_path):
    """Tiering (TRITON_MPS_SIM_OPT) runs a kernel's -O0 build first, then its -O2 build: both
    must compute the same bits, NaN payloads included. The baseline x86-64 target, where -O0
    half arithmetic propagates other NaN payloads, always builds -O2 (sim_device.cpp)."""
    targets = [t for t in _targets() if t != "x86_64"]
    if not targets:
        pytest.skip("this host runs only the baseline target, which is built -O2 only")
    for target in targets:
        _, quick = _run(tmp_path, target, "0")
        _, full = _run(tmp_path, target, "2")
        for i, (q, f) in enumerate(zip(quick, full, strict=True)):
            bad = np.nonzero(q != f)[0]
            assert bad.size == 0, f"output {i}, target {target}: -O0 and -O2 differ at {bad.size} inputs"
