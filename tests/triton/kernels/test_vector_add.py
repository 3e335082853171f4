"""kernels.vector_add through kernel[grid](...) on the active device (the simulator off macOS)."""

from __future__ import annotations

import pytest
import torch
from kernels_testing import poisoned_tensor, randn, seeded_generator, torch_device

from kernels import vector_add


@pytest.mark.parametrize("dtype", vector_add.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_add_matches_exact_sum(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    n = 3 * 256 + 37 + num_warps  # not a multiple of the block, differs per case
    x = randn(n, dtype, gen, dev, scale=100.0)
    y = randn(n, dtype, gen, dev)
    out = poisoned_tensor(n, dtype, dev)
    vector_add.add(x, y, out, block=256, num_warps=num_warps)
    # Sums of two fp32/fp16/bf16 values are correctly rounded: compare bit for bit.
    torch.testing.assert_close(out, vector_add.add_reference(x, y), rtol=0, atol=0)


@pytest.mark.parametrize("n", [1, 255, 1025])
def test_add_tail_sizes_do_not_write_past_the_end(mps_driver, rng, n):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    x = randn(n, torch.float32, gen, dev)
    y = randn(n, torch.float32, gen, dev)
    backing = poisoned_tensor(n + 64, torch.float32, dev)
    vector_add.add(x, y, backing[:n], block=128)
    torch.testing.assert_close(backing[:n], vector_add.add_reference(x, y), rtol=0, atol=0)
    assert torch.isnan(backing[n:]).all(), "the kernel wrote past the masked tail"


def test_add_rejects_mismatched_inputs(mps_driver):
    with pytest.raises(ValueError, match="differ"):
        vector_add.add(torch.zeros(4), torch.zeros(5))
