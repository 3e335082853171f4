"""float64 in software (issue 7): IEEE binary64 as ulong bits with soft-float helpers emitted into
the MSL. Differential tests against numpy float64 / exact rationals through kernel[grid], bit for
bit (NaN payloads aside), on random values of every kind (fp64_ref.samples)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from fp64_ref import fma_ref, mismatches, narrow_ref, partners, same_bits, samples, to_int_ref

N = 3000  # not a multiple of BLOCK: the tail is masked
BLOCK = 256


def _dev(mps_driver):
    return mps_driver.get_active_torch_device()


def _t(a: np.ndarray, dev) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(dev)


@triton.jit
def _arith(x_ptr, y_ptr, z_ptr, out_ptr, cmp_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, x + y, mask=m)
    tl.store(out_ptr + 1 * n + offs, x - y, mask=m)
    tl.store(out_ptr + 2 * n + offs, x * y, mask=m)
    tl.store(out_ptr + 3 * n + offs, x / y, mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.maximum(x, y), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.minimum(x, y), mask=m)
    tl.store(out_ptr + 8 * n + offs, tl.fma(x, y, z), mask=m)
    tl.store(out_ptr + 9 * n + offs, tl.sqrt(x), mask=m)
    tl.store(out_ptr + 10 * n + offs, -x, mask=m)
    tl.store(out_ptr + 11 * n + offs, tl.abs(x), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.floor(x), mask=m)
    tl.store(out_ptr + 13 * n + offs, tl.ceil(x), mask=m)
    tl.store(out_ptr + 14 * n + offs, x * 0.1 + 2.5, mask=m)  # f64 constants
    c = ((x < y).to(tl.int32) | ((x <= y).to(tl.int32) << 1) | ((x == y).to(tl.int32) << 2)
         | ((x != y).to(tl.int32) << 3) | ((x > y).to(tl.int32) << 4) | ((x >= y).to(tl.int32) << 5))
    tl.store(cmp_ptr + offs, c, mask=m)


def _max_ref(x, y, take_max: bool, propagate: bool):
    with np.errstate(all="ignore"):
        r = np.maximum(x, y) if take_max else np.minimum(x, y)
        if not propagate:
            r = np.fmax(x, y) if take_max else np.fmin(x, y)
    zeros = (x == 0) & (y == 0)
    signed = np.where(take_max, np.where(np.signbit(x) & np.signbit(y), -0.0, 0.0),
                      np.where(np.signbit(x) | np.signbit(y), -0.0, 0.0))
    return np.where(zeros, signed, r)


def test_fp64_arithmetic(mps_driver):
    rng = np.random.default_rng(7)
    dev = _dev(mps_driver)
    x = samples(rng, N)
    y = partners(rng, x)
    with np.errstate(all="ignore"):
        z = partners(rng, x * y)
    out = torch.full((15 * N,), float("nan"), dtype=torch.float64, device=dev)
    cmp = torch.full((N,), -1, dtype=torch.int32, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _arith[(triton.cdiv(N, BLOCK),)](_t(x, dev), _t(y, dev), _t(z, dev), out, cmp, N, BLOCK=BLOCK)
    got = out.cpu().numpy().reshape(15, N)
    with np.errstate(all="ignore"):
        refs = {
            "add": x + y, "sub": x - y, "mul": x * y, "div": x / y,
            "maximum": _max_ref(x, y, True, True), "minimum": _max_ref(x, y, False, True),
            "maxnum": _max_ref(x, y, True, False), "minnum": _max_ref(x, y, False, False),
            "fma": np.array([fma_ref(a, b, c) for a, b, c in zip(x, y, z, strict=True)]),
            "sqrt": np.sqrt(x), "neg": -x, "abs": np.abs(x), "floor": np.floor(x), "ceil": np.ceil(x),
            "const": x * 0.1 + 2.5,
        }
    for i, (name, want) in enumerate(refs.items()):
        assert same_bits(got[i], want).all(), f"{name}: {mismatches(got[i], want, x, y, z)}"
    with np.errstate(all="ignore"):
        want_cmp = ((x < y).astype(np.int32) | ((x <= y) << 1) | ((x == y) << 2) | ((x != y) << 3)
                    | ((x > y) << 4) | ((x >= y) << 5))
    c = cmp.cpu().numpy()
    bad = np.flatnonzero(c != want_cmp)[:5]
    assert bad.size == 0, [(x[i], y[i], c[i], want_cmp[i]) for i in bad]


@triton.jit
def _convert(x_ptr, f32_ptr, f16_ptr, bf16_ptr, e5_ptr, e4_ptr, i64_ptr, i32_ptr, i8_ptr, u64_ptr, u8_ptr, b_ptr,
             back_ptr, n, RTZ: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    rnd: tl.constexpr = "rtz" if RTZ else "rtne"
    f = x.to(tl.float32, fp_downcast_rounding=rnd)
    tl.store(f32_ptr + offs, f, mask=m)
    tl.store(f16_ptr + offs, x.to(tl.float16, fp_downcast_rounding=rnd), mask=m)
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding=rnd), mask=m)
    tl.store(e5_ptr + offs, x.to(tl.float8e5, fp_downcast_rounding=rnd), mask=m)
    tl.store(e4_ptr + offs, x.to(tl.float8e4nv, fp_downcast_rounding=rnd), mask=m)
    i = x.to(tl.int64)
    tl.store(i64_ptr + offs, i, mask=m)
    tl.store(i32_ptr + offs, x.to(tl.int32), mask=m)
    tl.store(i8_ptr + offs, x.to(tl.int8), mask=m)
    u = x.to(tl.uint64)
    tl.store(u64_ptr + offs, u, mask=m)
    tl.store(u8_ptr + offs, x.to(tl.uint8), mask=m)
    tl.store(b_ptr + offs, x.to(tl.int1), mask=m)
    # back to float64: exact from f32/f16/bf16, rounded from 64-bit integers
    tl.store(back_ptr + 0 * n + offs, f.to(tl.float64), mask=m)
    tl.store(back_ptr + 1 * n + offs, tl.load(f16_ptr + offs, mask=m).to(tl.float64), mask=m)
    tl.store(back_ptr + 2 * n + offs, tl.load(bf16_ptr + offs, mask=m).to(tl.float64), mask=m)
    tl.store(back_ptr + 3 * n + offs, tl.load(x_ptr.to(tl.pointer_type(tl.int64)) + offs, mask=m).to(tl.float64),
             mask=m)
    tl.store(back_ptr + 4 * n + offs, tl.load(x_ptr.to(tl.pointer_type(tl.uint64)) + offs, mask=m).to(tl.float64),
             mask=m)
    tl.store(back_ptr + 5 * n + offs, i.to(tl.int32).to(tl.float64), mask=m)
    tl.store(back_ptr + 6 * n + offs, (x != 0).to(tl.float64), mask=m)


@pytest.mark.parametrize("rtz", [False, True])
def test_fp64_conversions(mps_driver, rtz):
    rng = np.random.default_rng(11 + rtz)
    dev = _dev(mps_driver)
    x = samples(rng, N)
    outs = {name: torch.full((N,), 0x55, dtype=dt, device=dev) for name, dt in (
        ("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16), ("e5", torch.float8_e5m2),
        ("e4", torch.float8_e4m3fn), ("i64", torch.int64),
        ("i32", torch.int32), ("i8", torch.int8), ("u64", torch.uint64), ("u8", torch.uint8), ("b", torch.bool))}
    back = torch.full((7 * N,), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _convert[(triton.cdiv(N, BLOCK),)](_t(x, dev), *outs.values(), back, N, RTZ=rtz, BLOCK=BLOCK)
    mode = "rtz" if rtz else "rtne"
    for name, (eb, mb) in (("f32", (8, 23)), ("f16", (5, 10)), ("bf16", (8, 7))):
        got = outs[name].cpu().view(torch.int32 if name == "f32" else torch.int16).numpy().astype(np.int64)
        got &= (1 << (1 + eb + mb)) - 1
        want = np.array([narrow_ref(v, eb, mb, mode) for v in x])
        nan = np.isnan(x)
        expmask = ((1 << eb) - 1) << mb
        got_nan = ((got & expmask) == expmask) & ((got & ((1 << mb) - 1)) != 0)
        bad = np.flatnonzero(np.where(nan, ~got_nan, got != want))[:5]
        assert bad.size == 0, f"{name} {mode}: " + str([(x[i], hex(got[i]), hex(want[i])) for i in bad])
    # fp8 (saturating, as Triton's fp8 casts): f64 -> f32 rounded to odd, then the fp8 rounding
    for name, eb, mb, sat in (("e5", 5, 2, 0x7B), ("e4", 4, 3, 0x7E)):
        got = outs[name].cpu().view(torch.uint8).numpy().astype(np.int64)
        want = np.array([narrow_ref(v, eb, mb, mode, sat) for v in x])
        nan = np.isnan(x)
        got_nan = (got & 0x7F) == 0x7F if name == "e4" else (got & 0x7F) > 0x7C
        bad = np.flatnonzero(np.where(nan, ~got_nan, got != want))[:5]
        assert bad.size == 0, f"{name} {mode}: " + str([(x[i], hex(got[i]), hex(want[i])) for i in bad])
    for name, bits, signed in (("i64", 64, True), ("i32", 32, True), ("i8", 8, True), ("u64", 64, False),
                               ("u8", 8, False)):
        got = outs[name].cpu()
        got = [int(v) & ((1 << 64) - 1) if name == "u64" else int(v) for v in got.view(torch.int64 if name == "u64"
                                                                                      else got.dtype).tolist()]
        want = [to_int_ref(v, bits, signed) for v in x]
        bad = [(x[i], got[i], want[i]) for i in range(N) if got[i] != want[i]][:5]
        assert not bad, f"{name}: {bad}"
    assert np.array_equal(outs["b"].cpu().numpy(), x != 0)
    b = back.cpu().numpy().reshape(7, N)
    f32 = outs["f32"].cpu().numpy()
    ints = x.view(np.int64)
    i64 = outs["i64"].cpu().numpy()
    with np.errstate(all="ignore"):
        refs = [f32.astype(np.float64), outs["f16"].cpu().numpy().astype(np.float64),
                outs["bf16"].cpu().float().numpy().astype(np.float64), ints.astype(np.float64),
                x.view(np.uint64).astype(np.float64), i64.astype(np.int32).astype(np.float64),
                (x != 0).astype(np.float64)]
    for i, want in enumerate(refs):
        assert same_bits(b[i], want).all(), f"back #{i}: {mismatches(b[i], want, x)}"


@triton.jit
def _scalar_arg(x_ptr, out_ptr, s: tl.float64, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)


def test_fp64_scalar_argument_and_notice(mps_driver, fresh_cache):
    """An fp64 scalar argument arrives as 8 bytes (no rounding through float32); compiling a
    kernel with software float64 warns (once per process)."""
    from triton_mps.compiler.mslib import fp64

    dev = _dev(mps_driver)
    x = np.linspace(-3.0, 7.0, 300) + 1e-9
    out = torch.full((300,), float("nan"), dtype=torch.float64, device=dev)
    s = 1.0 + 2.0 ** -40  # not a float32
    fp64._warned = False
    with pytest.warns(RuntimeWarning, match="float64"):
        k = _scalar_arg[(3,)](_t(x, dev), out, s, 300, BLOCK=128)
    assert "double" not in k.asm["msl"] and "constant ulong&" in k.asm["msl"]
    want = x * s
    assert same_bits(out.cpu().numpy(), want).all(), mismatches(out.cpu().numpy(), want, x)


@triton.jit
def _reduce_scan(x_ptr, sum_ptr, max_ptr, cum_ptr, R, C: tl.constexpr, BR: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    cols = tl.arange(0, C)[None, :]
    m = rows < R
    x = tl.load(x_ptr + rows * C + cols, mask=m, other=0.0)
    tl.store(sum_ptr + rows, tl.sum(x, axis=1)[:, None], mask=m)
    tl.store(max_ptr + rows, tl.max(x, axis=1)[:, None], mask=m)
    tl.store(cum_ptr + rows * C + cols, tl.cumsum(x, axis=1), mask=m)


def _sum_bound(x: np.ndarray) -> np.ndarray:
    """|error| allowed for a sum of the rows of x in any order (n-1 roundings of partial sums)."""
    return x.shape[-1] * np.finfo(np.float64).eps * np.abs(x).sum(axis=-1) + 1e-300


def test_fp64_reduce_scan(mps_driver):
    """tt.reduce / tt.scan combine regions in software float64 (tree order): within the bound of
    n roundings of a float64 sum (a float32 accumulation would be ~1e9 times off)."""
    rng = np.random.default_rng(5)
    dev = _dev(mps_driver)
    R, C = 37, 64
    x = rng.standard_normal((R, C)) * np.exp2(rng.integers(-20, 20, size=(R, C)).astype(np.float64))
    sums = torch.full((R,), float("nan"), dtype=torch.float64, device=dev)
    maxs = torch.full((R,), float("nan"), dtype=torch.float64, device=dev)
    cums = torch.full((R, C), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _reduce_scan[(triton.cdiv(R, 8),)](_t(x, dev), sums, maxs, cums, R, C=C, BR=8, num_warps=4)
    exact = np.array([math.fsum(r) for r in x])
    assert (np.abs(sums.cpu().numpy() - exact) <= _sum_bound(x)).all()
    assert np.array_equal(maxs.cpu().numpy(), x.max(axis=1))
    cum_exact = np.array([[math.fsum(r[: j + 1]) for j in range(C)] for r in x])
    bound = np.stack([_sum_bound(x[:, : j + 1]) for j in range(C)], axis=1)
    assert (np.abs(cums.cpu().numpy() - cum_exact) <= bound).all()


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.load(c_ptr + rm * N + rn)
    tl.store(out_ptr + rm * N + rn, tl.dot(a, b, c, input_precision="ieee"))


@pytest.mark.parametrize("path", ["registers", "table", "scratch"])
def test_fp64_dot(mps_driver, path, monkeypatch, fresh_cache):
    """tl.dot on float64: one software fma per k (FMA path), within K roundings of the exact sum;
    operands from registers (fma calls unrolled, or a table-driven loop for many), or (forced)
    through threadgroup memory."""
    if path == "scratch":
        from triton_mps.compiler.ops import dot as dot_ops

        monkeypatch.setattr(dot_ops, "_register_plan", lambda *a: None)
    rng = np.random.default_rng(3)
    dev = _dev(mps_driver)
    M, N, K, warps, comment = {"registers": (16, 32, 16, 2, "from registers\n"),
                               "table": (32, 16, 32, 1, "from registers (table-driven loop)"),
                               "scratch": (16, 32, 16, 4, "with operands")}[path]
    a, b, c = rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))
    out = torch.full((M, N), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # (num_warps differs per path: a kernel of its own, not the in-memory one of another path)
        k = _dot[(1,)](_t(a, dev), _t(b, dev), _t(c, dev), out, M=M, N=N, K=K, num_warps=warps)
    assert f"software float64 FMA {comment}" in k.asm["msl"]
    terms = np.concatenate([a[:, None, :] * b.T[None, :, :], c[:, :, None]], axis=2)  # (M, N, K+1)
    exact = np.array([[math.fsum([*(a[i] * b[:, j]), c[i, j]]) for j in range(N)] for i in range(M)])
    assert (np.abs(out.cpu().numpy() - exact) <= _sum_bound(terms) * 2).all()


@triton.jit
def _atomics(p_ptr, v_ptr, old_ptr, x_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(v_ptr + offs, mask=m)
    old = tl.atomic_add(p_ptr + offs % NB, v, mask=m)
    tl.store(old_ptr + offs, old, mask=m)
    tl.atomic_xchg(x_ptr + offs, v * 2.0, mask=m)


def test_fp64_atomics(mps_driver):
    """tl.atomic_add on float64 under the 64-bit lock table (contended: 7 addresses), xchg."""
    rng = np.random.default_rng(9)
    dev = _dev(mps_driver)
    n, nb = 1000, 7
    v = rng.random(n) + 0.5  # positive: the olds of one address increase
    p = torch.zeros(nb, dtype=torch.float64, device=dev)
    old = torch.full((n,), float("nan"), dtype=torch.float64, device=dev)
    xs = torch.full((n,), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _atomics[(triton.cdiv(n, 128),)](p, _t(v, dev), old, xs, n, NB=nb, BLOCK=128)
    final, olds = p.cpu().numpy(), old.cpu().numpy()
    for a in range(nb):
        vs = v[a::nb]
        assert abs(final[a] - math.fsum(vs)) <= _sum_bound(vs[None, :])[0]
        seq = np.sort(olds[a::nb])  # a serial order: each old is the previous one plus some v
        assert seq[0] == 0.0 and len(np.unique(seq)) == len(vs)
    assert np.array_equal(xs.cpu().numpy(), v * 2.0)
