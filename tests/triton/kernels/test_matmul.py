"""kernels.matmul through kernel[grid](...) against float64 (exact int64 for int8) torch products."""

from __future__ import annotations

import math

import pytest
import torch
from kernels_testing import poisoned_tensor, randn, seeded_generator, torch_device

from kernels import matmul

# Relative error of the output dtype (fp32 accumulation error is far below fp16/bf16 rounding).
EPS = {torch.float32: 2.0**-23, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def make(shape, dtype, gen, dev):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, dtype=torch.int8).to(dev)
    return randn(shape, dtype, gen, dev)


def check(c, a, b):
    ref = matmul.matmul_reference(a, b)
    assert c.dtype == matmul.out_dtype(a.dtype)
    if a.dtype == torch.int8:
        assert torch.equal(c.long(), ref)
        return
    assert not torch.isnan(c).any(), "tiles left unwritten (poison survived)"
    k = a.shape[1]
    # Rounding the result: EPS * |c|; accumulating K fp32 products: ~K * 2**-24 * |a||b| <= sqrt(K) scale.
    tol = 4 * EPS[a.dtype]
    torch.testing.assert_close(c.double(), ref, rtol=tol, atol=tol * math.sqrt(k) + 32 * k * 2.0**-24)


@pytest.mark.parametrize("dtype", matmul.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_matmul_dtypes_and_warps(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    M, N, K = 70, 45, 83  # none a multiple of any block size
    a, b = make((M, K), dtype, gen, dev), make((K, N), dtype, gen, dev)
    c = poisoned_tensor((M, N), matmul.out_dtype(dtype), dev)
    bm, bn, bk, group_m, _ = matmul.CONFIGS[dtype]
    matmul.matmul(a, b, c, config=(bm, bn, bk, group_m, num_warps))
    check(c, a, b)


@pytest.mark.parametrize("group_m", [1, 2, 3, 8])
def test_grouped_order_covers_every_tile(mps_driver, rng, group_m):
    # 7 x 3 tiles of 16 x 16: bands of group_m tile-rows, the last band shorter when group_m
    # does not divide 7. Poisoned output: a tile no program computes stays NaN.
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    M, N, K = 16 * 6 + 5, 16 * 2 + 9, 20
    a, b = make((M, K), torch.float32, gen, dev), make((K, N), torch.float32, gen, dev)
    c = poisoned_tensor((M, N), torch.float32, dev)
    matmul.matmul(a, b, c, config=(16, 16, 8, group_m, 2))
    check(c, a, b)


@pytest.mark.parametrize("dtype", [torch.float16, torch.int8], ids=str)
def test_non_contiguous_operands_and_output(mps_driver, rng, dtype):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    M, N, K = 40, 33, 50
    a = make((K, M), dtype, gen, dev).t()                 # column-major A
    b = make((N, 2 * K), dtype, gen, dev).t()[::2]        # B with row stride 2, column stride 2K
    backing = poisoned_tensor((N, M), matmul.out_dtype(dtype), dev)
    c = backing.t()                                        # column-major C
    matmul.matmul(a, b, c)
    check(c, a, b)


def test_small_k_and_degenerate_shapes(mps_driver, rng):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    a, b = make((5, 3), torch.float32, gen, dev), make((3, 7), torch.float32, gen, dev)
    check(matmul.matmul(a, b), a, b)
    empty_k = matmul.matmul(torch.zeros(4, 0), torch.zeros(0, 6))
    assert torch.equal(empty_k, torch.zeros(4, 6))
    with pytest.raises(ValueError, match="do not chain"):
        matmul.matmul(a, a)


def launch(a, b, c, config):
    """matmul_kernel launched directly, returning the compiled kernel (to look at its MSL)."""
    (M, K), N = a.shape, b.shape[1]
    bm, bn, bk, group_m, num_warps = config
    grid = (((M + bm - 1) // bm) * ((N + bn - 1) // bn),)
    return matmul.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                      c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                      GROUP_M=group_m, INT_ACC=a.dtype == torch.int8, num_warps=num_warps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_default_float_config_uses_simdgroup_matrices(mps_driver, rng, dtype):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    a, b = make((45, 70), dtype, gen, dev), make((70, 38), dtype, gen, dev)
    c = poisoned_tensor((45, 38), dtype, dev)
    k = launch(a, b, c, matmul.CONFIGS[dtype])
    assert "simdgroup_multiply_accumulate" in k.asm["msl"]
    check(c, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_fma_path(mps_driver, rng, monkeypatch, fresh_cache, dtype):
    # TRITON_MPS_DOT=fma forces the per-thread FMA lowering (a fresh cache: the env var is not
    # part of Triton's cache key). A config no other test uses, so no in-memory kernel is reused.
    monkeypatch.setenv("TRITON_MPS_DOT", "fma")
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    a, b = make((37, 29), dtype, gen, dev), make((29, 51), dtype, gen, dev)
    c = poisoned_tensor((37, 51), dtype, dev)
    k = launch(a, b, c, (16, 32, 8, 2, 2))
    assert "simdgroup_multiply_accumulate" not in k.asm["msl"]
    check(c, a, b)


@pytest.mark.parametrize("config", [(64, 64, 32, 2, 8), (16, 16, 4, 1, 1), (8, 64, 16, 3, 2)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float16, torch.int8], ids=str)
def test_other_tile_shapes(mps_driver, rng, dtype, config):
    # Large tiles (scratch in row bands), BLOCK_K = 4 (below the 8x8 simdgroup tile), thin tiles.
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    a, b = make((75, 61), dtype, gen, dev), make((61, 70), dtype, gen, dev)
    c = poisoned_tensor((75, 70), matmul.out_dtype(dtype), dev)
    launch(a, b, c, config)
    check(c, a, b)
