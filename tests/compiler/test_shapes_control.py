"""2-D access, shape ops, convert_layout, control flow, noinline calls, unsupported-op errors."""

import numpy as np
import pytest
import triton
import triton.language as tl
from triton_mps.compiler import CompilationError, compile_ttgir
from ttgir_harness import compile_kernel, make_ttgir, poison


@triton.jit
def transpose_kernel(x, o, M, N, sxm, sxn, som, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    v = tl.load(x + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(o + rn[None, :] * som + rm[:, None], v, mask=mask)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("bm,bn", [(32, 16), (16, 64), (8, 8)])
def test_transpose_copy(bm, bn, num_warps):
    sig = dict(x="*fp32", o="*fp32", M="i32", N="i32", sxm="i32", sxn="i32", som="i32", BM="constexpr", BN="constexpr")
    k = compile_kernel(transpose_kernel, sig, dict(BM=bm, BN=bn), num_warps)
    M, N = 70, 45
    x = np.random.default_rng().standard_normal((M, N)).astype(np.float32)
    o = poison((N, M), np.float32)
    k(x, o, M, N, N, 1, M, grid=(triton.cdiv(M, bm), triton.cdiv(N, bn)))
    np.testing.assert_array_equal(o, x.T)


@triton.jit
def shape_kernel(x, o, OP: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    v = tl.load(x + r[:, None] * C + c[None, :])  # R x C
    if OP == "trans":
        t = tl.trans(v)  # C x R
        tl.store(o + c[:, None] * R + r[None, :], t)
    elif OP == "reshape":
        t = tl.reshape(v, (R * C // 4, 4))
        i = tl.arange(0, R * C // 4)
        j = tl.arange(0, 4)
        tl.store(o + i[:, None] * 4 + j[None, :], t)
    elif OP == "join":
        t = tl.join(v, v * 2.0)  # R x C x 2
        k = tl.arange(0, 2)
        tl.store(o + (r[:, None, None] * C + c[None, :, None]) * 2 + k[None, None, :], t)
    elif OP == "split":
        a, b = tl.split(tl.reshape(v, (R, C // 2, 2)))
        h = tl.arange(0, C // 2)
        tl.store(o + r[:, None] * (C // 2) + h[None, :], a + 100.0 * b)
    elif OP == "broadcast":
        row = tl.load(x + c)  # C
        t = v + row[None, :] + tl.sum(v, axis=1)[:, None] * 0.0 if False else v + row[None, :]
        tl.store(o + r[:, None] * C + c[None, :], t)
    elif OP == "cat":
        f = tl.reshape(v, (R * C,))
        t = tl.cat(f, f + 1.0, can_reorder=True)  # 2RC
        tl.store(o + tl.arange(0, 2 * R * C), t)
    elif OP == "expand":
        col = tl.load(x + r * C)  # R: first column
        t = tl.expand_dims(col, 1) + tl.zeros((R, C), tl.float32)
        tl.store(o + r[:, None] * C + c[None, :], t)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("op", ["trans", "reshape", "join", "split", "broadcast", "cat", "expand"])
def test_shape_ops(op, num_warps):
    R, C = 16, 8
    x = np.random.default_rng().standard_normal((R, C)).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "OP": "constexpr", "R": "constexpr", "C": "constexpr"}
    k = compile_kernel(shape_kernel, sig, {"OP": op, "R": R, "C": C}, num_warps)
    if op == "join":
        ref = np.stack([x, 2 * x], axis=-1)
    elif op == "trans":
        ref = x.T
    elif op == "reshape":
        ref = x.reshape(R * C // 4, 4)
    elif op == "split":
        y = x.reshape(R, C // 2, 2)
        ref = y[..., 0] + 100.0 * y[..., 1]
    elif op == "broadcast":
        ref = x + x[0][None, :]
    elif op == "cat":
        ref = None
    else:
        ref = np.repeat(x[:, :1], C, axis=1)
    o = poison(x.size * (2 if op in ("join", "cat") else 1), np.float32)
    k(x, o, grid=1)
    if op == "split":
        # a + 100 b may be one fma or two roundings (enable_fp_fusion): in float64, within the
        # rounding error of either (the operands' pairing is what this checks)
        a, b = y[..., 0].astype(np.float64), y[..., 1].astype(np.float64)
        got = o[:ref.size].reshape(ref.shape).astype(np.float64)
        assert np.all(np.abs(got - (a + 100.0 * b)) <= 2.0**-22 * (np.abs(a) + 100.0 * np.abs(b)))
        return
    if op == "cat":
        # can_reorder: the multiset of rows must match
        got = np.sort(o)
        np.testing.assert_allclose(got, np.sort(np.concatenate([x.ravel(), x.ravel() + 1])), rtol=1e-6)
        return
    np.testing.assert_allclose(o[:ref.size].reshape(ref.shape), ref, rtol=1e-6)


@triton.jit
def loop_kernel(x, o, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros((BLOCK,), tl.float32)
    prod = tl.full((BLOCK,), 1.0, tl.float32)
    for i in range(0, steps):
        v = tl.load(x + i * n + offs, mask=m, other=0.0)
        acc += v
        prod = prod * 0.5
    if steps > 3:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    j = 0
    while j < steps:
        j += 2
    tl.store(o + offs, acc + prod + j, mask=m)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("steps", [0, 3, 5])
def test_for_if_while(steps, num_warps):
    n, block = 100, 128
    x = np.random.default_rng().standard_normal((max(steps, 1), n)).astype(np.float32)
    k = compile_kernel(loop_kernel, {"x": "*fp32", "o": "*fp32", "n": "i32", "steps": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": block}, num_warps)
    o = poison(n, np.float32)
    k(x, o, n, steps, grid=1)
    acc = x[:steps].astype(np.float64).sum(axis=0) if steps else np.zeros(n)
    acc = acc * 2 if steps > 3 else acc - 1
    j = 0
    while j < steps:
        j += 2
    np.testing.assert_allclose(o, acc + 0.5 ** steps + j, rtol=1e-5, atol=1e-5)


@triton.jit
def early_return_kernel(x, o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


def test_early_return():
    n, block = 200, 64
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(early_return_kernel, sig, {"BLOCK": block}, 2)
    o = poison(n, np.float32)
    k(x, o, n, grid=8)  # programs past n return early
    np.testing.assert_allclose(o, x + 1, rtol=1e-6)


@triton.jit(noinline=True)
def scaled(a, s):
    return a * s + 1


@triton.jit
def call_kernel(x, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    s = scaled(tl.load(x).to(tl.float32), 3.0)
    tl.store(o + offs, v + s, mask=offs < n)


def test_noinline_call():
    n, block = 100, 64
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    k = compile_kernel(call_kernel, {"x": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": block}, 2)
    assert "tmps_fn_" in k.msl
    o = poison(n, np.float32)
    k(x, o, n, grid=2)
    # x0 * 3 + 1 may be one fma or two roundings: in float64, within the rounding of either
    x64 = x.astype(np.float64)
    want = x64 + (x64[0] * 3 + 1)
    assert np.all(np.abs(o.astype(np.float64) - want) <= 2.0**-22 * (np.abs(x64) + 3 * abs(x64[0]) + 1))


@triton.jit
def cvt_kernel(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    # Force a layout change: the expanded 2-D view stored transposed-ish.
    t = tl.reshape(v, (BLOCK // 8, 8))
    tt = tl.trans(t)
    i = tl.arange(0, 8)
    j = tl.arange(0, BLOCK // 8)
    tl.store(o + i[:, None] * (BLOCK // 8) + j[None, :], tt)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_convert_layout_paths(num_warps):
    block = 256
    x = np.random.default_rng().standard_normal(block).astype(np.float32)
    k = compile_kernel(cvt_kernel, {"x": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": block}, num_warps)
    o = poison(block, np.float32)
    k(x, o, grid=1)
    np.testing.assert_array_equal(o.reshape(8, block // 8), x.reshape(block // 8, 8).T)


@triton.jit
def inline_asm_kernel(x, o):
    v = tl.load(x + tl.arange(0, 32))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o + tl.arange(0, 32), y)


def test_unsupported_op_error():
    """An op with no MSL lowering (PTX inline assembly) names the op, the kernel and the line."""
    sig = {"x": "*i32", "o": "*i32"}
    mod, ctx = make_ttgir(inline_asm_kernel, sig, {}, 1)
    with pytest.raises(CompilationError) as ei:
        compile_ttgir(mod, num_warps=1, signature=sig, constants={}, kernel_name="inline_asm_kernel", context=ctx)
    msg = str(ei.value)
    assert "inline_asm_kernel" in msg and "test_shapes_control.py" in msg and "tt.elementwise_inline_asm" in msg, msg
    assert ei.value.line == inline_asm_kernel.fn.__code__.co_firstlineno + 3
