"""Triton kernels on collapsed SIMD-groups (issue 29, sim/simd_collapse.h): the bits of one fiber
per thread (TRITON_MPS_SIM_COLLAPSE=0, read at each dispatch) and the right values."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from tmps_testing import collapsed_and_fibers
from triton_mps import _core


# Triton kernels: reductions and scans through SIMD-group functions and threadgroup memory,
# sizes that are not multiples of the block.
@triton.jit
def _softmax(x, o, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * n + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(o + row * n + cols, e / tl.sum(e, axis=0), mask=cols < n)


@triton.jit
def _cumsum_argmax(x, o, idx, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * n + cols, mask=cols < n, other=0.0)
    tl.store(o + row * n + cols, tl.cumsum(v, axis=0), mask=cols < n)
    tl.store(idx + row, tl.argmax(tl.where(cols < n, v, -float("inf")), axis=0))


@pytest.mark.parametrize("n", [1000, 77])
def test_triton_reductions_collapsed_give_the_bits_of_fibers(monkeypatch, n):
    rows = 24
    x = torch.randn(rows, n, dtype=torch.float32)

    def run():
        o = torch.full_like(x, float("nan"))
        c = torch.full_like(x, float("nan"))
        i = torch.full((rows,), -1, dtype=torch.int32)
        _softmax[(rows,)](x, o, n, BLOCK=triton.next_power_of_2(n))
        _cumsum_argmax[(rows,)](x, c, i, n, BLOCK=triton.next_power_of_2(n))
        return o, c, i

    before = _core.sim_collapse_counts().get("collapsed", 0)
    (o1, c1, i1), (o0, c0, i0) = collapsed_and_fibers(monkeypatch, run)
    assert _core.sim_collapse_counts().get("collapsed", 0) >= before + 2
    assert torch.equal(o1.view(torch.int32), o0.view(torch.int32))
    assert torch.equal(c1.view(torch.int32), c0.view(torch.int32))
    assert torch.equal(i1, i0)
    x64 = x.double()
    torch.testing.assert_close(o1.double(), torch.softmax(x64, 1), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(c1.double(), torch.cumsum(x64, 1), rtol=1e-4, atol=1e-4)
    assert torch.equal(i1.long(), x.argmax(1))


# tl.dot through simdgroup_matrix (ops/dot.py) on collapsed SIMD-groups: the matrices are whole
# per SIMD-group there (tmps_metal_matrix.h, sg_matrix).
@triton.jit
def _matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        av = tl.load(a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        bv = tl.load(b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(av, bv, input_precision="ieee")
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _attention(q, k, v, o, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    qb = tl.load(q + rm[:, None] * D + rd[None, :], mask=rm[:, None] < T, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, T, BN):
        rn = start + tl.arange(0, BN)
        kb = tl.load(k + rn[:, None] * D + rd[None, :], mask=rn[:, None] < T, other=0.0)
        s = tl.where(rn[None, :] < T, tl.dot(qb, tl.trans(kb)) * scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        vb = tl.load(v + rn[:, None] * D + rd[None, :], mask=rn[:, None] < T, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(vb.dtype), vb)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    tl.store(o + rm[:, None] * D + rd[None, :], acc / l_i[:, None], mask=rm[:, None] < T)


# (BM, BN, BK, num_warps): 4 SIMD-groups with 2x2 tiles each; 2 SIMD-groups of a 2x4 tile grid;
# one 8x8 tile for 2 SIMD-groups (the second has none: a uniform guard around the matrix code).
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("blocks", [(32, 32, 32, 4), (16, 32, 16, 2), (8, 8, 16, 2)])
def test_tl_dot_collapsed_gives_the_bits_of_fibers(monkeypatch, dtype, blocks):
    BM, BN, BK, warps = blocks
    M, N, K = 45, 37, 70  # no multiple of any block
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(K, N).to(dtype)

    def run():
        c = torch.full((M, N), float("nan"))
        _matmul[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=warps)
        return c

    before = _core.sim_collapse_counts().get("collapsed", 0)
    c1, c0 = collapsed_and_fibers(monkeypatch, run)
    assert _core.sim_collapse_counts().get("collapsed", 0) >= before + 1
    assert torch.equal(c1.view(torch.int32), c0.view(torch.int32))
    torch.testing.assert_close(c1.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_attention_collapsed_gives_the_bits_of_fibers(monkeypatch, dtype):
    T, D, BM, BN = 100, 32, 32, 32
    q, k, v = (torch.randn(T, D).to(dtype) for _ in range(3))

    def run():
        o = torch.full((T, D), float("nan"))
        _attention[(triton.cdiv(T, BM),)](q, k, v, o, T, D ** -0.5, D=D, BM=BM, BN=BN)
        return o

    before = _core.sim_collapse_counts().get("collapsed", 0)
    o1, o0 = collapsed_and_fibers(monkeypatch, run)
    assert _core.sim_collapse_counts().get("collapsed", 0) >= before + 1
    assert torch.equal(o1.view(torch.int32), o0.view(torch.int32))
    want = torch.softmax((q.double() @ k.double().T) * D ** -0.5, 1) @ v.double()
    torch.testing.assert_close(o1.double(), want, rtol=2e-3, atol=2e-3)
