"""kernels.softmax (both schedules) through kernel[grid](...) against a float64 torch softmax."""

from __future__ import annotations

import pytest
import torch
from kernels_testing import poisoned_tensor, randn, seeded_generator, torch_device

from kernels import softmax

# Output rounding dominates: fp16 has an 11-bit significand.
TOL = {torch.float32: dict(rtol=2e-5, atol=1e-7), torch.float16: dict(rtol=2e-3, atol=1e-5)}


def check(out, x):
    ref = softmax.softmax_reference(x)
    assert not torch.isnan(out).any(), "rows left unwritten (poison survived)"
    torch.testing.assert_close(out.double(), ref, **TOL[x.dtype])


@pytest.mark.parametrize("dtype", softmax.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("rows_per_program", [1, 4])
def test_rows_schedule(mps_driver, rng, dtype, num_warps, rows_per_program):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    shape = (13, 100 + 17 * num_warps)  # neither dimension a multiple of the tile
    x = randn(shape, dtype, gen, dev, scale=4.0)
    out = poisoned_tensor(shape, dtype, dev)
    softmax.softmax(x, out, rows_per_program=rows_per_program, num_warps=num_warps)
    check(out, x)


@pytest.mark.parametrize("dtype", softmax.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 4])
def test_persistent_schedule(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    shape = (37, 300)
    x = randn(shape, dtype, gen, dev, scale=4.0)
    out = poisoned_tensor(shape, dtype, dev)
    softmax.softmax(x, out, programs=5, num_warps=num_warps)  # 37 rows over 5 programs: uneven
    check(out, x)


def test_strided_rows_and_large_values(mps_driver, rng):
    # A row stride larger than the width (a column slice), and values whose exp overflows fp32
    # without the max subtraction.
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    base = randn((9, 80), torch.float32, gen, dev, scale=30.0) + 200.0
    x = base[:, 5:70]
    out = poisoned_tensor((9, 65), torch.float32, dev)
    softmax.softmax(x, out, rows_per_program=2, num_warps=2)
    check(out, x)


def test_single_column_is_one(mps_driver):
    dev = torch_device(mps_driver)
    x = torch.randn(6, 1, device=dev)
    out = poisoned_tensor((6, 1), torch.float32, dev)
    softmax.softmax(x, out)
    assert torch.equal(out, torch.ones(6, 1))


@pytest.mark.parametrize("num_warps", [1, 8])
def test_wide_rows(mps_driver, rng, num_warps):
    # 1500 columns in one 2048-wide block: 64 (1 warp) or 8 (8 warps) elements per thread.
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    x = randn((3, 1500), torch.float16, gen, dev, scale=3.0)
    out = poisoned_tensor((3, 1500), torch.float16, dev)
    softmax.softmax(x, out, num_warps=num_warps)
    check(out, x)
