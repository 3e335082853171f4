"""Layout conversions through threadgroup memory (compiler/scratch.py): runs of registers at
consecutive scratch indices move as one vector access, and an exchange at the kernel's top
level with no threadgroup memory used before it has no barrier before its writes. Results are
exact, and the race check (TRITON_MPS_RACECHECK) finds no race where a barrier was left out."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def widen(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 16-bit loads and 32-bit stores take different blocked layouts (8 vs 4 per thread): a
    # ttg.convert_layout through threadgroup memory.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, x.to(tl.float32) * 3.0 + 1.0, mask=mask)


@triton.jit
def widen_twice(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Two exchanges in a row: the second must wait until every thread has read the first.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + offs, a, mask=mask)
    b = tl.load(y_ptr + offs, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + n + offs, a + b, mask=mask)


@triton.jit
def widen_loop(x_ptr, out_ptr, n, ROUNDS: tl.constexpr, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    # The exchange inside a loop: iteration i + 1 writes what iteration i read.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    for i in range(ROUNDS):
        o = offs + i * STRIDE
        mask = offs < n
        x = tl.load(x_ptr + o, mask=mask, other=0)
        tl.store(out_ptr + o, x.to(tl.float32) - i, mask=mask)


def _msl(k) -> str:
    return k.asm["msl"]


def _barriers(msl: str) -> int:
    return msl.count("threadgroup_barrier(")


def _vector_scratch(msl: str) -> set[str]:
    """The vector types of threadgroup-memory accesses in the kernel."""
    return set(re.findall(r"\*\(threadgroup (\w+[24])\*\)", msl))


@pytest.fixture(params=["0", "1"], ids=["plain", "racecheck"])
def racecheck(request, monkeypatch):
    monkeypatch.setenv("TRITON_MPS_RACECHECK", request.param)
    return request.param == "1"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int16, torch.int8])
@pytest.mark.parametrize("n", [4096, 5000, 37])
def test_widen_exact(mps_driver, racecheck, dtype, n):
    dev = mps_driver.get_active_torch_device()
    g = torch.Generator().manual_seed(n)
    if dtype.is_floating_point:
        x = (torch.randn(n, generator=g) * 50).to(dtype)
    else:
        x = torch.randint(-100, 100, (n,), generator=g, dtype=dtype)
    out = torch.full((n,), float("nan"), device=dev)  # poison
    k = widen[(triton.cdiv(n, 1024),)](x.to(dev), out, n, BLOCK=1024)
    expect = x.double() * 3.0 + 1.0
    np.testing.assert_array_equal(out.cpu().double().numpy(), expect.float().double().numpy())
    msl = _msl(k)
    # Triton exchanges the 16-bit floats before converting them (8 per thread written as one
    # packed uint4, read 4 at a time) and the integers after (as float).
    vectors = {torch.float16: {"uint4", "half4"}, torch.bfloat16: {"uint4", "bfloat4"},
               torch.int16: {"float4"}, torch.int8: {"float4"}}[dtype]
    assert _vector_scratch(msl) == vectors
    assert "] = " not in msl.split("through threadgroup memory")[1].split("threadgroup_barrier")[0]  # no scalar write
    assert _barriers(msl) == 1  # the first exchange of the kernel: none before its writes


def test_second_exchange_keeps_its_barrier(mps_driver, racecheck):
    dev = mps_driver.get_active_torch_device()
    n = 3000
    x = torch.randn(n).half()
    y = torch.randn(n).half()
    out = torch.full((2 * n,), float("nan"), device=dev)
    k = widen_twice[(triton.cdiv(n, 1024),)](x.to(dev), y.to(dev), out, n, BLOCK=1024)
    xs, ys = x.float(), y.float()
    assert torch.equal(out.cpu(), torch.cat([xs, xs + ys]))
    msl = _msl(k)
    assert msl.count("through threadgroup memory") == 2
    assert _barriers(msl) == 3  # 1 + 2: the second exchange waits for the first's readers


def test_exchange_in_a_loop_keeps_its_barriers(mps_driver, racecheck):
    dev = mps_driver.get_active_torch_device()
    n, rounds, stride = 1500, 3, 2048
    x = torch.randn(stride * rounds).half()
    out = torch.full((stride * rounds,), float("nan"), device=dev)
    k = widen_loop[(triton.cdiv(n, 1024),)](x.to(dev), out, n, ROUNDS=rounds, STRIDE=stride, BLOCK=1024)
    out = out.cpu().view(rounds, stride)
    x = x.view(rounds, stride)
    for i in range(rounds):
        assert torch.equal(out[i, :n], x[i, :n].float() - i)
        assert out[i, n:].isnan().all()  # masked off: untouched
    msl = _msl(k)
    assert "for (" in msl and _vector_scratch(msl) == {"uint4", "half4"}
    assert _barriers(msl) == 2  # in a loop: both barriers of its exchange stay


@triton.jit
def cumsum_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0)
    tl.store(out_ptr + row * n + cols, tl.cumsum(v, axis=0), mask=cols < n)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.float32])
@pytest.mark.parametrize("n, block, warps", [(1000, 1024, 4), (300, 512, 8), (2047, 2048, 4)])
def test_scan_segment_totals_as_vectors(mps_driver, racecheck, dtype, n, block, warps):
    # A scan across SIMD-groups exchanges each thread's segment totals through threadgroup
    # memory (ops/reduce.py): consecutive slots of a thread move as one vector.
    dev = mps_driver.get_active_torch_device()
    rows = 3
    g = torch.Generator().manual_seed(n + block)
    if dtype.is_floating_point:
        x = torch.randn(rows, n, generator=g)
    else:
        x = torch.randint(-50, 50, (rows, n), generator=g, dtype=dtype)
    out = torch.full((rows, n), -7, dtype=dtype, device=dev)
    k = cumsum_rows[(rows,)](x.to(dev), out, n, BLOCK=block, num_warps=warps)
    got = out.cpu()
    if dtype.is_floating_point:  # a tree's order of additions: compare with float64 sums
        ref = torch.cumsum(x.double(), 1)
        torch.testing.assert_close(got.double(), ref, rtol=0, atol=1e-4 * ref.abs().max().item())
    else:
        assert torch.equal(got, torch.cumsum(x, 1).to(dtype))
    elem = {torch.int32: "int", torch.int16: "int", torch.float32: "float"}[dtype]  # int16 sums as int32
    assert any(v.startswith(elem) for v in _vector_scratch(_msl(k))), _msl(k)


@triton.jit
def transpose(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], tl.trans(x))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m, n", [(64, 64), (32, 128)])
def test_transpose_packed_runs(mps_driver, racecheck, dtype, m, n):
    # Runs longer than 4 elements of 1- and 2-byte types move as uint2/uint4 words (as_type per
    # word): the byte order must survive on the way in and out.
    dev = mps_driver.get_active_torch_device()
    g = torch.Generator().manual_seed(m * n)
    x = (torch.randn(m, n, generator=g) * 60).to(dtype)
    out = torch.full((n, m), -1, dtype=dtype, device=dev)
    k = transpose[(1,)](x.to(dev), out, M=m, N=n)
    assert torch.equal(out.cpu(), x.T)
    vectors = _vector_scratch(_msl(k))
    assert vectors, _msl(k)
    if dtype.itemsize < 4:
        assert vectors & {"uint4", "uint2"}, vectors
