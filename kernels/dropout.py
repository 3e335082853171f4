"""Dropout that stores no mask: the keep/drop decision for element i is a pure function of
(seed, i), drawn with Triton's Philox generator (`tl.rand(seed, i)`), so the backward pass (or a
check) regenerates it from the seed instead of reading a saved mask.

out[i] = x[i] / (1 - p) where rand(seed, i) > p, else 0.

`philox_uniform` below is a kernel-free numpy model of what tl.randint / tl.rand compute
(Philox-4x32 with 10 rounds, counter (i_lo, i_hi, 0, 0), key (seed_lo, seed_hi); the uniform float
maps the first word w (as int32) to (w < 0 ? ~w : w) * 4.6566127342e-10 in fp32). The reference
uses it to recompute the mask exactly.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < n
    x = tl.load(x_ptr + idx, mask=inside)
    keep = tl.rand(seed, idx) > p
    kept = x.to(tl.float32) * (1.0 / (1.0 - p))
    tl.store(out_ptr + idx, tl.where(keep, kept, 0.0).to(out_ptr.dtype.element_ty), mask=inside)


@triton.jit
def random_streams_kernel(out_int_ptr, out_uniform_ptr, out_normal_ptr, n, seed, BLOCK: tl.constexpr):
    """Writes tl.randint, tl.rand and tl.randn for offsets 0..n-1 (for testing the generator)."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < n
    tl.store(out_int_ptr + idx, tl.randint(seed, idx), mask=inside)
    tl.store(out_uniform_ptr + idx, tl.rand(seed, idx), mask=inside)
    tl.store(out_normal_ptr + idx, tl.randn(seed, idx), mask=inside)


def dropout(x: torch.Tensor, p: float, seed: int, out: torch.Tensor | None = None, *, block: int = 1024,
            num_warps: int = 4) -> torch.Tensor:
    """Dropout of a contiguous tensor with drop probability p (0 <= p < 1), mask from `seed`."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p={p} must be in [0, 1)")
    if not x.is_contiguous() or x.dtype not in DTYPES:
        raise ValueError(f"dropout: expected a contiguous {DTYPES} tensor, got {x.dtype}")
    if out is None:
        out = torch.empty_like(x)
    n = x.numel()
    if n:
        dropout_kernel[(triton.cdiv(n, block),)](x, out, n, p, seed, BLOCK=block, num_warps=num_warps)
    return out


def random_streams(n: int, seed: int, device=None, *, block: int = 512, num_warps: int = 4):
    """(tl.randint, tl.rand, tl.randn) at offsets 0..n-1: int32, fp32, fp32 tensors."""
    ints = torch.empty(n, dtype=torch.int32, device=device)
    uni = torch.empty(n, dtype=torch.float32, device=device)
    normal = torch.empty(n, dtype=torch.float32, device=device)
    random_streams_kernel[(triton.cdiv(n, block),)](ints, uni, normal, n, seed, BLOCK=block, num_warps=num_warps)
    return ints, uni, normal


# ---- kernel-free model of Triton's Philox ---------------------------------------------------

_ROUND_A, _ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_KEY_A, _KEY_B = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)


def philox4(seed: int, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """The four uint32 output words of Philox-4x32-10 for each offset, as tl.randint4x returns them."""
    off = np.asarray(offsets, dtype=np.int64).view(np.uint64)
    c0, c1 = off & _LOW32, off >> np.uint64(32)
    c2 = c3 = np.zeros_like(c0)
    seed = int(seed) % 2**64
    k0 = np.full_like(c0, seed & 0xFFFFFFFF)
    k1 = np.full_like(c0, seed >> 32)
    for _ in range(10):
        prod_b = _ROUND_B * c2  # 32 x 32 -> 64-bit products: exact in uint64
        prod_a = _ROUND_A * c0
        c0, c1, c2, c3 = ((prod_b >> np.uint64(32)) ^ c1 ^ k0, prod_b & _LOW32,
                          (prod_a >> np.uint64(32)) ^ c3 ^ k1, prod_a & _LOW32)
        k0 = (k0 + _KEY_A) & _LOW32
        k1 = (k1 + _KEY_B) & _LOW32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def uniform_from_words(words: np.ndarray) -> np.ndarray:
    """Triton's word -> fp32 in [0, 1) map."""
    w = words.view(np.int32)
    w = np.where(w < 0, ~w, w)
    return w.astype(np.float32) * np.float32(4.6566127342e-10)


def philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.rand(seed, offsets) in numpy."""
    return uniform_from_words(philox4(seed, offsets)[0])


def philox_normal(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.randn(seed, offsets) in numpy, float64 (Box-Muller on the first two uniforms)."""
    w0, w1, _, _ = philox4(seed, offsets)
    u1 = np.maximum(np.float32(1.0e-7), uniform_from_words(w0)).astype(np.float64)
    u2 = uniform_from_words(w1).astype(np.float64)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def dropout_reference(x: torch.Tensor, p: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(expected output in float64, keep mask), the mask recomputed without a kernel."""
    keep = torch.from_numpy(philox_uniform(seed, np.arange(x.numel())) > np.float32(p)).reshape(x.shape)
    scale = 1.0 / (1.0 - float(np.float32(p)))
    return torch.where(keep, x.double().cpu() * scale, 0.0), keep
