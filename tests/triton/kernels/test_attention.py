"""kernels/attention.py through kernel[grid] on torch tensors: causal and not, head dims, dtypes."""

from __future__ import annotations

import pytest
import torch
from layer_kernels_testing import assert_close64, device, poisoned_tensor, randn, torch_gen

from kernels.attention import attention_forward, attention_reference

# (head_dim, num_warps): every head dim and every warp count, without the full product.
DIM_WARPS = [(16, 1), (32, 2), (64, 4), (32, 8)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim,num_warps", DIM_WARPS)
def test_attention(mps_driver, rng, dtype, causal, head_dim, num_warps):
    dev = device(mps_driver)
    g = torch_gen(rng)
    batch, heads, seq = 2, 2, 37  # 37: neither a multiple of BLOCK_M (16) nor of BLOCK_N (16)
    q, k, v = (randn(g, batch, heads, seq, head_dim, dtype=dtype, dev=dev) for _ in range(3))
    out = poisoned_tensor((batch, heads, seq, head_dim), dtype, dev)
    attention_forward(q, k, v, causal=causal, num_warps=num_warps, out=out)
    assert_close64(out, attention_reference(q, k, v, causal=causal), dtype)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_blocks_scale_and_strides(mps_driver, rng, causal):
    """Rectangular blocks, a given scale, and q/k/v that are views with non-default strides."""
    dev = device(mps_driver)
    g = torch_gen(rng)
    batch, heads, seq, dim = 1, 3, 50, 32
    # (batch, seq, heads, dim) storage seen as (batch, heads, seq, dim): the usual projection layout.
    q, k, v = (randn(g, batch, seq, heads, dim, dtype=torch.float32, dev=dev).transpose(1, 2) for _ in range(3))
    out = attention_forward(q, k, v, causal=causal, scale=0.3, block_m=32, block_n=16, num_warps=4)
    assert_close64(out, attention_reference(q, k, v, causal=causal, scale=0.3), torch.float32)


def test_attention_large_scores_do_not_overflow(mps_driver, rng):
    """Scores around 100: exp without the running max would overflow fp32."""
    dev = device(mps_driver)
    g = torch_gen(rng)
    q, k, v = (randn(g, 1, 1, 20, 16, dtype=torch.float32, dev=dev, scale=4.0) for _ in range(3))
    out = attention_forward(q, k, v, scale=1.0, num_warps=2)
    assert_close64(out, attention_reference(q, k, v, scale=1.0), torch.float32, scale=10.0)
