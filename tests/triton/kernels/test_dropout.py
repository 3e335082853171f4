"""kernels.dropout and Triton's Philox streams (tl.rand, tl.randint, tl.randn) through
kernel[grid](...), against a kernel-free numpy model of the generator and against statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from kernels_testing import poisoned_tensor, randn, seeded_generator, torch_device

from kernels import dropout

TOL = {torch.float32: dict(rtol=1e-6, atol=0), torch.float16: dict(rtol=1e-3, atol=0),
       torch.bfloat16: dict(rtol=8e-3, atol=0)}


def fresh_seed(rng) -> int:
    return int(rng.integers(0, 2**31 - 1))


@pytest.mark.parametrize("dtype", dropout.DTYPES, ids=str)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_dropout_matches_recomputed_mask(mps_driver, rng, dtype, num_warps):
    dev = torch_device(mps_driver)
    gen = seeded_generator(rng)
    n, p, seed = 2 * 512 + 77, 0.3, fresh_seed(rng)
    # |x| + 1 >= 1: no zeros in any dtype (randn + 3 can round to exactly 0 in bf16), and a
    # zero output then means "dropped".
    x = randn(n, dtype, gen, dev).abs() + 1.0
    out = poisoned_tensor(n, dtype, dev)
    dropout.dropout(x, p, seed, out, block=512, num_warps=num_warps)
    expected, keep = dropout.dropout_reference(x, p, seed)
    assert torch.equal(out != 0, keep), "keep mask differs from the recomputed Philox mask"
    torch.testing.assert_close(out.double(), expected, **TOL[dtype])


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate(mps_driver, rng, p):
    dev = torch_device(mps_driver)
    n = 20000
    x = torch.ones(n, device=dev)
    out = dropout.dropout(x, p, fresh_seed(rng))
    kept = (out != 0).double().mean().item()
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(kept - (1 - p)) < 5 * sigma, f"keep rate {kept:.4f}, expected {1 - p} +- {5 * sigma:.4f}"
    torch.testing.assert_close(out[out != 0], torch.full_like(out[out != 0], 1 / (1 - p)))


def test_same_seed_same_mask_other_seed_other_mask(mps_driver, rng):
    dev = torch_device(mps_driver)
    n, p, seed = 8000, 0.5, fresh_seed(rng)
    x = torch.rand(n, device=dev) + 1.0
    first = dropout.dropout(x, p, seed)
    again = dropout.dropout(x, p, seed)
    other = dropout.dropout(x, p, seed + 1)
    assert torch.equal(first, again)
    agree = ((first != 0) == (other != 0)).double().mean().item()
    # Independent masks agree on p^2 + (1-p)^2 = 1/2 of the elements.
    assert abs(agree - 0.5) < 5 * math.sqrt(0.25 / n), f"masks of seeds {seed}, {seed + 1} agree on {agree:.3f}"


def test_64_bit_seed_uses_the_high_word(mps_driver, rng):
    dev = torch_device(mps_driver)
    n, p = 3000, 0.5
    seed = (1 << 40) + fresh_seed(rng)  # passed as an i64 scalar; Philox's key gets the high word
    x = torch.ones(n, device=dev)
    out = dropout.dropout(x, p, seed)
    assert torch.equal(out != 0, dropout.dropout_reference(x, p, seed)[1])
    low_only = dropout.dropout(x, p, seed & 0xFFFFFFFF)
    assert not torch.equal(out, low_only)


def test_p_zero_keeps_everything_and_bad_p_raises(mps_driver, rng):
    dev = torch_device(mps_driver)
    x = torch.randn(300, device=dev)
    torch.testing.assert_close(dropout.dropout(x, 0.0, 7), x, rtol=0, atol=0)
    with pytest.raises(ValueError, match="p=1.0"):
        dropout.dropout(x, 1.0, 7)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_random_streams_match_philox_model(mps_driver, rng, num_warps):
    dev = torch_device(mps_driver)
    n, seed = 1000 + 3 * num_warps, fresh_seed(rng)
    ints, uni, normal = dropout.random_streams(n, seed, dev, block=256, num_warps=num_warps)
    offsets = np.arange(n)
    words = dropout.philox4(seed, offsets)[0]
    assert np.array_equal(ints.cpu().numpy(), words.view(np.int32)), "tl.randint differs from Philox-4x32-10"
    assert np.array_equal(uni.cpu().numpy(), dropout.philox_uniform(seed, offsets)), "tl.rand differs"
    # randn goes through fp32 log/sqrt/cos: close, not exact.
    np.testing.assert_allclose(normal.cpu().numpy(), dropout.philox_normal(seed, offsets), rtol=1e-4, atol=2e-5)


def test_random_stream_statistics(mps_driver, rng):
    dev = torch_device(mps_driver)
    n = 30000
    ints, uni, normal = dropout.random_streams(n, fresh_seed(rng), dev)
    u = uni.double()
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    counts = torch.histc(u, bins=10, min=0.0, max=1.0)
    assert (counts - n / 10).abs().max() < 6 * math.sqrt(n / 10), f"uneven uniform histogram {counts.tolist()}"
    z = normal.double()
    assert abs(z.mean().item()) < 5 / math.sqrt(n)
    assert abs(z.var().item() - 1.0) < 5 * math.sqrt(2 / n)
    assert abs((z.abs() < 1).double().mean().item() - 0.6827) < 0.02  # one-sigma mass
    bits = ints.cpu().numpy().view(np.uint32)
    for b in range(32):  # every bit of randint is a fair coin
        ones = ((bits >> b) & 1).mean()
        assert abs(ones - 0.5) < 5 * math.sqrt(0.25 / n), f"bit {b} of tl.randint set {ones:.3f} of the time"
    assert len(np.unique(bits)) > n - 5  # 32-bit words: (almost) no repeats
