"""Fused attention forward: softmax(q k^T * scale [+ causal mask]) v without materializing the
(seq x seq) score matrix.

One program owns BLOCK_M query rows of one (batch, head). It streams K and V in BLOCK_N blocks
and keeps, per query row, the running maximum score `row_max`, the running softmax denominator
`row_sum` and the unnormalized output `acc`. When a new block raises the maximum, the old sum
and accumulator are rescaled by exp(old_max - new_max) (the "online softmax"), so one pass over
K/V gives the exact result. Scores are computed in fp32 whatever the input dtype; p is cast back
to V's dtype for the second dot (as fp16 kernels do on GPUs).

Masking: key columns at or past `seq_len` score -inf; with CAUSAL, so do keys after the query
(and the loop stops at the last block the program's rows can see). Query rows past `seq_len`
are computed on clamped-to-zero data and never stored.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_forward(q_ptr, k_ptr, v_ptr, o_ptr,
                       sq_b, sq_h, sq_s, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, so_b, so_h, so_s,
                       n_heads, seq_len, scale,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    block_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // n_heads).to(tl.int64)
    h = (bh % n_heads).to(tl.int64)
    q_base = q_ptr + b * sq_b + h * sq_h
    k_base = k_ptr + b * sk_b + h * sk_h
    v_base = v_ptr + b * sv_b + h * sv_h
    o_base = o_ptr + b * so_b + h * so_h

    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    keys = tl.arange(0, BLOCK_N)
    row_ok = rows < seq_len
    q = tl.load(q_base + rows[:, None] * sq_s + dims[None, :], mask=row_ok[:, None], other=0.0)

    row_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # With CAUSAL, keys past this block's last row are masked for every row: skip those blocks.
    if CAUSAL:
        end = tl.minimum(seq_len, (block_m + 1) * BLOCK_M)
    else:
        end = seq_len
    for start in range(0, end, BLOCK_N):
        cols = start + keys
        col_ok = cols < seq_len
        k = tl.load(k_base + cols[:, None] * sk_s + dims[None, :], mask=col_ok[:, None], other=0.0)
        v = tl.load(v_base + cols[:, None] * sv_s + dims[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        visible = col_ok[None, :]
        if CAUSAL:
            visible = visible & (cols[None, :] <= rows[:, None])
        s = tl.where(visible, s, float("-inf"))
        # Every row sees key 0 in the first block, so new_max is finite from then on.
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.exp(s - new_max[:, None])
        shrink = tl.exp(row_max - new_max)
        row_sum = row_sum * shrink + tl.sum(p, axis=1)
        acc = acc * shrink[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(o_base + rows[:, None] * so_s + dims[None, :], out, mask=row_ok[:, None])


def attention_forward(q, k, v, *, causal=False, scale=None, block_m=16, block_n=16, num_warps=4, out=None):
    """softmax(q k^T * scale) v for q, k, v of shape (batch, heads, seq, head_dim).

    head_dim must be a power of two >= 16 (tl.dot's minimum); the last dim must be contiguous.
    """
    batch, heads, seq, dim = q.shape
    assert k.shape == q.shape and v.shape == q.shape, "q, k, v must have the same shape"
    assert dim >= 16 and dim & (dim - 1) == 0, f"head_dim {dim} must be a power of two >= 16"
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    o = torch.empty_like(q) if out is None else out
    assert o.stride(-1) == 1
    grid = (triton.cdiv(seq, block_m), batch * heads)
    if seq and batch * heads:
        _attention_forward[grid](q, k, v, o, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                                 heads, seq, scale, HEAD_DIM=dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                                 num_warps=num_warps)
    return o


def attention_reference(q, k, v, *, causal=False, scale=None):
    """The same in float64 with the full score matrix (torch)."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q64 @ k64.transpose(-1, -2) * scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v64
