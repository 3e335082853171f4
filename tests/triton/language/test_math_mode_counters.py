"""Math mode (enable_fp_fusion: explicit fma or none) and the simulator's per-dispatch counters,
through kernel[grid] on the simulator."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton_mps import _core


@triton.jit
def _madd(a, b, c, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(a + offs, mask=m)
    y = tl.load(b + offs, mask=m)
    z = tl.load(c + offs, mask=m)
    tl.store(out + offs, x * y + z, mask=m)


@triton.jit
def _dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y))


@pytest.fixture
def counters():
    was = triton_mps.counters_enabled()
    triton_mps.set_counters(True)
    yield
    triton_mps.set_counters(was)


def _madd_inputs(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(n, generator=g) + 1
    b = torch.rand(n, generator=g) + 1
    # c = -(a*b rounded): a*b + c is then the product's rounding error, which only an fma keeps.
    c = -(a * b)
    return a, b, c


@pytest.mark.parametrize("fusion", [True, False])
def test_fp_fusion_decides_fma_and_counters_see_the_traffic(fusion, counters, rng, mps_driver):
    n = 1000  # not a multiple of the block
    a, b, c = _madd_inputs(n, int(rng.integers(1 << 31)))
    out = torch.full((n,), float("nan"))
    k = _madd[(triton.cdiv(n, 128),)](a, b, c, out, n, BLOCK=128, enable_fp_fusion=fusion)
    stats = triton_mps.last_dispatch_stats()
    msl = k.asm["msl"]
    msl = msl.decode() if isinstance(msl, bytes) else msl
    assert "#pragma METAL fp contract(off)" in msl and "#pragma METAL fp math_mode(safe)" in msl
    assert ("fma(" in msl) == fusion
    an, bn, cn = (t.numpy() for t in (a, b, c))
    unfused = an * bn + cn  # float32: the product rounds, then the sum
    fused = (an.astype(np.float64) * bn + cn).astype(np.float32)  # exact here: one rounding, as fma
    assert np.count_nonzero(fused != unfused) > n // 2  # the test can tell the two apart
    np.testing.assert_array_equal(out.numpy(), fused if fusion else unfused)

    if not mps_driver.config["is_simulator"]:
        # The counters are the simulator's (as in the tests below): on the emulated Metal device
        # last_dispatch_stats() need not describe this dispatch (it read 2x the traffic when this
        # test ran alone there, at every head tried).
        return
    assert stats is not None and stats["memory_counted"]
    by_index = {buf["index"]: buf for buf in stats["buffers"]}
    for i in range(3):  # a, b, c: every element read exactly once
        assert by_index[i]["read"] == by_index[i]["distinct_read"] == 4 * n
        assert by_index[i]["written"] == 0
    assert by_index[3]["written"] == by_index[3]["distinct_written"] == 4 * n and by_index[3]["read"] == 0
    assert stats["device_distinct_bytes_written"] == 4 * n
    assert stats["simdgroup_matrix_flops"] == 0 and stats["threadgroups"] == 8
    # x * y + z: one mul and one add (or one fma, 2 FLOPs) per element in each of the 8 x 128
    # threads (threads past n compute too; their stores are masked)
    assert stats["scalar_flops"] == 2 * 8 * 128


@triton.jit
def _flop_mix(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    acc = x
    for _ in range(STEPS):  # a loop: counted as it runs, not as written
        acc = acc / 3.0 - x
    tl.store(out_ptr + offs, acc, mask=offs < n)


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_scalar_flops_count_what_runs(steps, counters, rng):
    n, block, warps = 1000, 256, 4
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    out = torch.full((n,), float("nan"))
    _flop_mix[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, STEPS=steps, num_warps=warps)
    stats = triton_mps.last_dispatch_stats()
    ref = x.double()
    acc = ref.clone()
    for _ in range(steps):
        acc = acc / 3.0 - ref
    torch.testing.assert_close(out.double(), acc, rtol=1e-5, atol=1e-5)
    assert stats["scalar_flops"] == 2 * steps * triton.cdiv(n, block) * block  # div + sub per element


# (16, 16, 4): K under 8, the FMA path; (32, 32, 32): simdgroup_matrix; float64: soft FMA
@pytest.mark.parametrize("M,N,K,dtype", [(16, 16, 4, np.float32), (32, 32, 32, np.float32), (16, 16, 16, np.float64)])
def test_dot_flops_are_counted_on_every_path(M, N, K, dtype, counters, rng):
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(dtype))
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(dtype))
    c = torch.full((M, N), float("nan"), dtype=a.dtype)
    _dot_p[(1,)](a, b, c, M=M, N=N, K=K, PRECISION="ieee")
    stats = triton_mps.last_dispatch_stats()
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)
    # the dot's 2MNK FLOPs, once (4 warps, at least 256 outputs: no thread holds copies)
    on_matrix = M == 32
    assert stats["simdgroup_matrix_flops"] == (2 * M * N * K if on_matrix else 0)
    assert stats["scalar_flops"] == (0 if on_matrix else 2 * M * N * K)


@triton.jit
def _dot_p(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y, input_precision=PRECISION))


@pytest.mark.parametrize("K", [32, 512])
def test_counters_count_simdgroup_matrix_flops(counters, rng, K):
    M = N = 32
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float16))
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float16))
    c = torch.full((M, N), float("nan"))
    _dot[(1,)](a, b, c, M=M, N=N, K=K)
    stats = triton_mps.last_dispatch_stats()
    ref = a.double() @ b.double()
    torch.testing.assert_close(c.double(), ref, rtol=1e-3, atol=1e-3)
    assert stats["simdgroup_matrix_flops"] == 2 * M * N * K
    assert stats["simdgroup_matrix_ops"] == (M // 8) * (N // 8) * (K // 8)
    # The simulator defers multiplies: an 8x8 output tile's K/8 multiplies complete together
    # (one SIMD-group exchange per 16, the shim's chain), not one exchange each.
    assert stats["simdgroup_matrix_exchanges"] == (M // 8) * (N // 8) * -(-(K // 8) // 16)
    # Each operand element is read from device memory at least once.
    assert stats["device_distinct_bytes_read"] >= 2 * (M * K + K * N)


def test_launch_results_and_the_profiler_carry_the_counters(counters, mps_driver):
    if not mps_driver.config["is_simulator"]:
        pytest.skip("the counters are the simulator's")
    stats = []
    with triton_mps.profile() as prof:
        for n in (1000, 300):
            a, b, c = _madd_inputs(n, n)
            out = torch.full((n,), float("nan"))
            _madd[(triton.cdiv(n, 128),)](a, b, c, out, n, BLOCK=128)
            stats.append(triton_mps.last_dispatch_stats())
    recs = [r for r in prof if r.kernel.endswith("madd")]
    # the same totals as last_dispatch_stats(): a, b, c (12 bytes per element) and the scalar n
    # (a buffer too: 4 bytes per thread); out written once
    assert [r.counters["device_bytes_read"] for r in recs] == [s["device_bytes_read"] for s in stats]
    assert [r.counters["device_bytes_read"] for r in recs] == [12 * 1000 + 4 * 1024, 12 * 300 + 4 * 384]
    assert [r.counters["device_bytes_written"] for r in recs] == [4 * 1000, 4 * 300]
    assert all(r.counters["simdgroup_matrix_flops"] == 0 and r.counters["memory_counted"] for r in recs)
    lines = prof.table().splitlines()
    header = lines[0].split()  # the counter columns are last, one word each
    from_end = len(header) - header.index("device_bytes_read")
    row = next(line for line in lines if "madd" in line.split()[0])
    assert row.split()[-from_end] == f"{sum(r.counters['device_bytes_read'] for r in recs):,}"
    assert "device_loads" not in lines[0]  # detail counters stay in the records

    # The direct API: a timed launch's result carries the same counters.
    n = 256
    pipeline = triton_mps.compile_msl(
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "kernel void twice(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
        "                  uint i [[thread_position_in_grid]]) { y[i] = 2.0f * x[i]; }\n", "twice")
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    timing = pipeline(x, y, grid=n // 64, threads=64, timed=True)
    triton_mps.synchronize()
    assert timing.ready and timing.counters["device_bytes_read"] == 4 * n
    assert timing.counters["device_bytes_written"] == 4 * n
    np.testing.assert_array_equal(y, 2 * x)


def test_counting_off_records_nothing_new(rng):
    triton_mps.set_counters(True)
    n = 300
    a, b, c = _madd_inputs(n, 1)
    out = torch.empty(n)
    _madd[(3,)](a, b, c, out, n, BLOCK=128)
    first = triton_mps.last_dispatch_stats()
    triton_mps.set_counters(False)
    try:
        _madd[(1,)](a, b, c, out, 100, BLOCK=128)
        assert triton_mps.last_dispatch_stats() == first  # the uncounted dispatch left no trace
    finally:
        triton_mps.set_counters(False)


@pytest.mark.skipif(not hasattr(_core, "emu_stats"), reason="built without the emulated Metal device")
def test_metal_pipelines_are_built_in_safe_math_mode():
    emu = triton_mps.get_device("metal-emu")
    before = _core.emu_stats()
    src = ("kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) "
           "{ y[i] = y[i] * 2.0f + 1.0f; }")
    triton_mps.compile_msl(src, "k", emu, label="safe_math_probe")
    after = _core.emu_stats()
    assert after["libraries_safe_math"] == before["libraries_safe_math"] + 1
    assert after["libraries_fast_math"] == before["libraries_fast_math"]
