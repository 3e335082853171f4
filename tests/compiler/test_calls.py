"""noinline functions (tt.call) with tensor arguments and results: the callee is one MSL
function per TTGIR function, called with every register by value; results come back per
register. Callees may use threadgroup memory (reductions) and may be called several times,
from loops, and from other callees.

Triton 3.9's frontend refuses non-scalar tensor ARGUMENTS to noinline functions
(code_generator._check_fn_args) although the rest of its pipeline handles them; tests of tensor
arguments lift that check (fixture `tensor_args`) to reach our lowering. Tensor RESULTS and
1-element tensor arguments need no such help."""

from __future__ import annotations

import re

import numpy as np
import pytest
import triton
import triton.language as tl
from ttgir_harness import compile_kernel, poison

SIG_XON = {"x": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@pytest.fixture
def tensor_args(monkeypatch):
    """Let the Triton frontend pass block tensors to noinline functions."""
    import triton.compiler.code_generator as cg

    monkeypatch.setattr(cg, "_check_fn_args", lambda node, fn, args: None)


def _callees(msl: str) -> list[str]:
    """Names of the MSL functions defined for noinline callees."""
    return re.findall(r"^\S+ (tmps_fn_\w+)\(", msl, flags=re.M)


# ---- tensor arguments and a tensor result ---------------------------------------------------

@triton.jit(noinline=True)
def axpb(a, b, s):
    return a * s + b


@triton.jit
def axpb_kernel(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m, other=0.0)
    b = tl.load(y + offs, mask=m, other=0.0)
    tl.store(o + offs, axpb(a, b, 2.5), mask=m)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_tensor_args_and_result(num_warps, tensor_args):
    rng = np.random.default_rng()
    n, block = 300, 128
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    sig = {"x": "*fp32", "y": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(axpb_kernel, sig, {"BLOCK": block}, num_warps)
    assert len(_callees(k.msl)) == 1
    o = poison(n, np.float32)
    k(x, y, o, n, grid=3)
    np.testing.assert_allclose(o, x.astype(np.float64) * 2.5 + y, rtol=1e-6, atol=1e-6)


# ---- a reduction inside the callee (scratch + barriers), called twice ------------------------

@triton.jit(noinline=True)
def centered(v, m, n):
    mean = tl.sum(tl.where(m, v, 0.0), axis=0) / n
    return tl.where(m, v - mean, 0.0)


@triton.jit
def center_twice_kernel(x, o, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0.0)
    c1 = centered(v, m, n)
    # Second call on a value that depends on the first: scratch reused across calls.
    c2 = centered(c1 * c1, m, n)
    tl.store(o + offs, c1 + c2 * 10.0, mask=m)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_reduction_in_callee_called_twice(num_warps, tensor_args):
    n, block = 200, 256
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    k = compile_kernel(center_twice_kernel, SIG_XON, {"BLOCK": block}, num_warps)
    names = _callees(k.msl)
    assert len(names) == 1 and k.msl.count(names[0] + "(") == 3  # one definition, two calls
    assert k.cm.shared > 0
    o = poison(n, np.float32)
    k(x, o, n, grid=1)
    xd = x.astype(np.float64)
    c1 = xd - xd.mean()
    c2 = c1 * c1 - (c1 * c1).mean()
    np.testing.assert_allclose(o, c1 + 10 * c2, rtol=1e-4, atol=1e-4)


# ---- called in a loop, the callee's result carried --------------------------------------------

@triton.jit(noinline=True)
def step(acc, v, i):
    # max over the block (cross-warp through threadgroup memory) and an elementwise update
    return acc * 0.5 + v * i + tl.max(v, axis=0)


@triton.jit
def loop_kernel(x, o, n, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=-float("inf"))
    v = tl.where(m, v, -1e30)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(iters):
        acc = step(acc, v, i.to(tl.float32))
    tl.store(o + offs, acc, mask=m)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_called_in_a_loop(num_warps, tensor_args):
    n, block, iters = 150, 64, 5
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "n": "i32", "iters": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(loop_kernel, sig, {"BLOCK": block}, num_warps)
    assert len(_callees(k.msl)) == 1
    o = poison(n, np.float32)
    k(x, o, n, iters, grid=3)
    ref = np.zeros(n)
    xd = x.astype(np.float64)
    for p in range(3):
        sl = slice(p * block, min((p + 1) * block, n))
        acc, v = np.zeros(sl.stop - sl.start), xd[sl]
        for i in range(iters):
            acc = acc * 0.5 + v * i + v.max()
        ref[sl] = acc
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


# ---- two results of different types, a 2-D argument and a reduced (sliced) result -------------

@triton.jit(noinline=True)
def row_stats(t, k):
    s = tl.sum(t, axis=1)
    idx = tl.argmax(t, axis=1)
    return s * k, idx


@triton.jit
def two_results_kernel(x, s_out, i_out, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    t = tl.load(x + r[:, None] * C + c[None, :])
    s, i = row_stats(t, 3.0)
    tl.store(s_out + r, s)
    tl.store(i_out + r, i)


@pytest.mark.parametrize("num_warps", [1, 2, 4])
def test_two_results(num_warps, tensor_args):
    R, C = 16, 32
    x = np.random.default_rng().standard_normal((R, C)).astype(np.float32)
    sig = {"x": "*fp32", "s_out": "*fp32", "i_out": "*i32", "R": "constexpr", "C": "constexpr"}
    k = compile_kernel(two_results_kernel, sig, {"R": R, "C": C}, num_warps)
    s, i = poison(R, np.float32), poison(R, np.int32)
    k(x, s, i, grid=1)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=1) * 3, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(i, x.argmax(axis=1))


# ---- a callee calling another callee; the inner one also called directly ----------------------

@triton.jit(noinline=True)
def sq(v):
    return v * v


@triton.jit(noinline=True)
def norm2(v):
    return tl.sqrt(tl.sum(sq(v), axis=0))


@triton.jit
def nested_kernel(x, o, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0.0)
    tl.store(o + offs, sq(v) / norm2(v), mask=m)


def test_nested_calls(tensor_args):
    n, block = 100, 128
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    k = compile_kernel(nested_kernel, SIG_XON, {"BLOCK": block}, 2)
    names = _callees(k.msl)
    assert len(names) == 2 and "sq" in names[0] and "norm2" in names[1]  # callee before caller
    o = poison(n, np.float32)
    k(x, o, n, grid=1)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(o, xd * xd / np.sqrt((xd * xd).sum()), rtol=1e-5, atol=1e-6)


# ---- two specializations of one function: two MSL functions ----------------------------------

@triton.jit(noinline=True)
def plus(a, b):
    return a + b


@triton.jit
def two_specs_kernel(x, i, o, oi, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o + offs, plus(tl.load(x + offs), 1.5))
    tl.store(oi + offs, plus(tl.load(i + offs), 7))


def test_specializations_are_distinct_functions(tensor_args):
    block = 64
    rng = np.random.default_rng()
    x = rng.standard_normal(block).astype(np.float32)
    iv = rng.integers(-1000, 1000, block).astype(np.int32)
    sig = {"x": "*fp32", "i": "*i32", "o": "*fp32", "oi": "*i32", "BLOCK": "constexpr"}
    k = compile_kernel(two_specs_kernel, sig, {"BLOCK": block}, 2)
    assert len(set(_callees(k.msl))) == 2
    o, oi = poison(block, np.float32), poison(block, np.int32)
    k(x, iv, o, oi, grid=1)
    np.testing.assert_array_equal(o, x + np.float32(1.5))
    np.testing.assert_array_equal(oi, iv + 7)


# ---- without lifting the frontend check: tensor results, 1-element tensor arguments ----------

@triton.jit(noinline=True)
def load_block_stats(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(p + offs, mask=offs < n, other=0.0)
    total = tl.sum(v, axis=0, keep_dims=True)  # shape [1]: a tensor with a layout
    return v - total / n, total


@triton.jit(noinline=True)
def scale_one(t, k):
    return t * k


@triton.jit
def frontend_kernel(x, o, tot, n, BLOCK: tl.constexpr):
    c, total = load_block_stats(x, n, BLOCK)
    offs = tl.arange(0, BLOCK)
    tl.store(o + offs, c, mask=offs < n)
    tl.store(tot + tl.arange(0, 1), scale_one(total, 2.0))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_tensor_results_through_the_frontend(num_warps):
    n, block = 90, 128
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "tot": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(frontend_kernel, sig, {"BLOCK": block}, num_warps)
    assert len(_callees(k.msl)) == 2
    o, tot = poison(n, np.float32), poison(1, np.float32)
    k(x, o, tot, n, grid=1)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(o, xd - xd.mean(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tot, [2 * xd.sum()], rtol=1e-5, atol=1e-5)
