"""tt.dot inside a K loop: the accumulator stays in simdgroup_matrix registers across the loop
(staged in once before it, read back once after it); loops where that cannot be proven keep the
per-dot round trip and stay correct."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton_mps.compiler.ops import dot as dot_mod
from ttgir_harness import bf16_to_f32, compile_kernel, f32_to_bf16, poison

CARRIED = "accumulator carried in simdgroup_matrix registers across the loop"
SIG_T = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}


@triton.jit
def loop_matmul(a_ptr, b_ptr, c_ptr, t_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, MODE: tl.constexpr):
    # MODE 0: plain K loop; 1: the dot result is changed before it is yielded; 2: the carried
    # accumulator is also read by a row sum inside the loop (t, per column block); 3: C += A @ B.
    pid_n = tl.program_id(0) % tl.cdiv(N, BN)
    pid_m = tl.program_id(0) // tl.cdiv(N, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if MODE == 3:  # C += A @ B: a non-uniform initial accumulator, staged before the loop
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    tot = tl.zeros((BM,), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0)
        b = tl.load(b_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0)
        if MODE == 2:
            tot += tl.sum(acc, axis=1)
        acc = tl.dot(a, b, acc)
        if MODE == 1:
            acc = acc + 0.5
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
    if MODE == 2:
        tl.store(t_ptr + pid_n * M + rm, tot, mask=rm < M)  # one row per column block


def compile_loop(dtype, blocks, num_warps, mode):
    bm, bn, bk = blocks
    sig = {"a_ptr": f"*{SIG_T[dtype]}", "b_ptr": f"*{SIG_T[dtype]}", "c_ptr": "*fp32", "t_ptr": "*fp32",
           "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
           "MODE": "constexpr"}
    return compile_kernel(loop_matmul, sig, {"BM": bm, "BN": bn, "BK": bk, "MODE": mode}, num_warps)


def rand(rng, shape, dtype):
    """(array passed to the kernel, its exact values as a float64 tensor)."""
    f = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bf16":
        u = f32_to_bf16(f)
        return u, torch.from_numpy(bf16_to_f32(u)).double()
    x = f.astype(np.float16 if dtype == "fp16" else np.float32)
    return x, torch.from_numpy(x).double()


def close(got, ref, scale, K):
    """fp32 accumulation of exact products (fp16/bf16 inputs widen exactly): error bound grows
    with K times the sum of |terms|."""
    tol = 4 * K * 2.0 ** -24 * scale + 1e-6
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(np.isfinite(got)), "non-finite (poison left?)"
    assert np.all(err <= tol), f"max error {err.max()} (tolerance {tol.min()}..{tol.max()})"


def run(k, dtype, M, N, K, blocks, mode):
    bm, bn, bk = blocks
    rng = np.random.default_rng()
    a, a64 = rand(rng, (M, K), dtype)
    b, b64 = rand(rng, (K, N), dtype)
    c = poison((M, N), np.float32)
    c0 = torch.zeros(M, N, dtype=torch.float64)
    if mode == 3:
        c[...] = rng.standard_normal((M, N)).astype(np.float32)
        c0 = torch.from_numpy(c).double()
    t = poison((triton.cdiv(N, bn), M), np.float32)
    k(a, b, c, t, M, N, K, grid=triton.cdiv(M, bm) * triton.cdiv(N, bn))
    iters = triton.cdiv(K, bk)
    ref = c0 + a64 @ b64 + (0.5 * iters if mode == 1 else 0.0)
    scale = (c0.abs() + a64.abs() @ b64.abs()).numpy() + (0.5 * iters if mode == 1 else 0.0)
    close(c, ref.numpy(), scale, K)
    if mode == 2:
        # tot sums the row sums (over the program's columns) of the partial products before
        # each K step.
        nb = triton.cdiv(N, bn)
        tref = torch.zeros(nb, M, dtype=torch.float64)
        tsc = torch.zeros(nb, M, dtype=torch.float64)
        for j in range(iters):
            kj = j * bk
            for q in range(nb):
                cols = slice(q * bn, (q + 1) * bn)
                tref[q] += (a64[:, :kj] @ b64[:kj, cols]).sum(1)
                tsc[q] += (a64[:, :kj].abs() @ b64[:kj, cols].abs()).sum(1)
        close(t, tref.numpy(), tsc.numpy(), K * bn)


def loop_body(msl: str) -> tuple[str, str]:
    """(body of the first `for` loop after the carried accumulator is staged, text after it)."""
    i = msl.index(CARRIED)
    m = re.compile(r"^\s*for \(", re.M).search(msl, i)
    assert m, "no loop after the staged accumulator"
    j = msl.index("{", m.end())
    depth, pos = 0, j
    while True:
        ch = msl[pos]
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            return msl[j:pos], msl[pos:]
        pos += 1


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_loop_accumulator_in_simdgroup_registers(dtype, num_warps, monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, "auto")
    blocks = (32, 32, 16) if num_warps < 8 else (64, 32, 32)
    k = compile_loop(dtype, blocks, num_warps, 0)
    body, after = loop_body(k.msl)
    assert "simdgroup_multiply_accumulate" in body
    assert "simdgroup_store" not in body  # no read-back of the accumulator inside the loop
    assert not re.search(r"simdgroup_load\(\w+_acc", body)  # nor a reload of it
    assert "simdgroup_store" in after
    assert not re.search(r"simdgroup_load\(\w+_acc", k.msl)  # tl.zeros init: filled, not staged
    bm, bn, bk = blocks
    for M, N, K in ((bm * 2 + 5, bn + 3, bk * 3 + 7), (bm, bn, bk), (7, 5, 3), (bm + 1, bn, 0)):
        run(k, dtype, M, N, K, blocks, 0)


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_ineligible_loops_keep_the_round_trip(mode, num_warps, monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, "auto")
    blocks = (32, 16, 16)
    k = compile_loop("fp16", blocks, num_warps, mode)
    assert CARRIED not in k.msl
    assert "simdgroup_matrix 8x8, SIMD-groups" in k.msl  # the per-dot simdgroup lowering
    for M, N, K in ((71, 37, 53), (32, 16, 16)):
        run(k, "fp16", M, N, K, blocks, mode)


def test_fma_mode_does_not_carry(monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, "fma")
    k = compile_loop("fp32", (16, 16, 8), 2, 0)
    assert CARRIED not in k.msl
    run(k, "fp32", 29, 21, 19, (16, 16, 8), 0)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_loaded_initial_accumulator(num_warps, monkeypatch):
    monkeypatch.setenv(dot_mod.ENV, "auto")
    blocks = (32, 32, 16)
    k = compile_loop("bf16", blocks, num_warps, 3)
    before = k.msl[k.msl.index(CARRIED):]
    before = before[:re.compile(r"^\s*for \(", re.M).search(before).start()]
    assert re.search(r"simdgroup_load\(\w+_acc", before)  # the loaded C is staged in once
    body, _ = loop_body(k.msl)
    assert "simdgroup_store" not in body and "simdgroup_multiply_accumulate" in body
    for M, N, K in ((69, 35, 55), (32, 32, 0), (5, 9, 16)):
        run(k, "bf16", M, N, K, blocks, 3)
