"""tt.reduce / tt.scan / tt.histogram / tt.gather end to end on the simulator.

Fresh random inputs every run, poisoned outputs, shapes that are not multiples of the block
(masked loads with `other`), num_warps 1/2/4/8, float64 references."""

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps.compiler.ops.reduce as reduce_mod  # registers the lowerings (until ops/__init__ does)
from tmps_testing import linrec_reference
from ttgir_harness import compile_kernel, poison

WARPS = [1, 2, 4, 8]
# (BM, BN, M, N): includes 1xN, Nx1, tiles smaller than the thread count, partial tiles
SHAPES = [(16, 64, 13, 50), (1, 128, 1, 100), (64, 1, 60, 1), (4, 8, 3, 7), (32, 32, 32, 32), (2, 256, 2, 200)]


def _rng():
    return np.random.default_rng()


# ---------------------------------------------------------------------------------------------
# sum / max / min over axis 0 and 1


@triton.jit
def _kept_index(M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    """Offsets (and their mask) along the dimension a reduction over AXIS keeps."""
    if AXIS == 1:
        o = tl.arange(0, BM)
        om = o < M
    else:
        o = tl.arange(0, BN)
        om = o < N
    return o, om


@triton.jit
def smm_kernel(x_ptr, s_ptr, mx_ptr, mn_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0.0)
    xmax = tl.load(x_ptr + r * N + c, mask=m, other=float("-inf"))
    xmin = tl.load(x_ptr + r * N + c, mask=m, other=float("inf"))
    s = tl.sum(x, axis=AXIS)
    hi = tl.max(xmax, axis=AXIS)
    lo = tl.min(xmin, axis=AXIS)
    o, om = _kept_index(M, N, BM, BN, AXIS)
    tl.store(s_ptr + o, s, mask=om)
    tl.store(mx_ptr + o, hi, mask=om)
    tl.store(mn_ptr + o, lo, mask=om)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", SHAPES)
def test_sum_max_min(shape, axis, num_warps):
    BM, BN, M, N = shape
    sig = {"x_ptr": "*fp32", "s_ptr": "*fp32", "mx_ptr": "*fp32", "mn_ptr": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(smm_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    x = _rng().standard_normal((M, N)).astype(np.float32)
    n_out = M if axis == 1 else N
    outs = [poison(n_out, np.float32) for _ in range(3)]
    k(x, *outs, M, N)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(outs[0], x64.sum(axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], x.max(axis))
    np.testing.assert_array_equal(outs[2], x.min(axis))


@triton.jit
def full_sum_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    # 1-D reduction to a scalar, accumulated over several programs' worth of blocks.
    acc = 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    tl.store(o_ptr + tl.program_id(0), acc)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("block,n", [(32, 31), (128, 1000), (1024, 3000), (8, 5)])
def test_full_sum_scalar(block, n, num_warps):
    k = compile_kernel(full_sum_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": block}, num_warps)
    x = _rng().standard_normal(n).astype(np.float32)
    out = poison(3, np.float32)
    k(x, out, n, grid=3)
    np.testing.assert_allclose(out, np.full(3, x.astype(np.float64).sum()), rtol=1e-5, atol=1e-4)


@triton.jit
def sum3d_kernel(x_ptr, o_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    s = tl.sum(x, axis=AXIS)
    if AXIS == 0:
        tl.store(o_ptr + tl.arange(0, B)[:, None] * C + tl.arange(0, C)[None, :], s)
    elif AXIS == 1:
        tl.store(o_ptr + tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :], s)
    else:
        tl.store(o_ptr + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :], s)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_sum_3d(axis, num_warps):
    A, B, C = 4, 16, 8
    k = compile_kernel(sum3d_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "A": "constexpr", "B": "constexpr",
                                      "C": "constexpr", "AXIS": "constexpr"},
                       {"A": A, "B": B, "C": C, "AXIS": axis}, num_warps)
    x = _rng().standard_normal((A, B, C)).astype(np.float32)
    ref = x.astype(np.float64).sum(axis)
    out = poison(ref.shape, np.float32)
    k(x, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# argmax / argmin (ties: the smallest index wins)


@triton.jit
def arg_kernel(x_ptr, amax_ptr, amin_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    xa = tl.load(x_ptr + r * N + c, mask=m, other=float("-inf"))
    xi = tl.load(x_ptr + r * N + c, mask=m, other=float("inf"))
    amax = tl.argmax(xa, axis=AXIS)
    amin = tl.argmin(xi, axis=AXIS)
    o, om = _kept_index(M, N, BM, BN, AXIS)
    tl.store(amax_ptr + o, amax, mask=om)
    tl.store(amin_ptr + o, amin, mask=om)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(16, 64, 13, 50), (64, 32, 64, 30), (1, 512, 1, 500), (8, 8, 8, 8)])
def test_argmax_argmin_ties(shape, axis, num_warps):
    BM, BN, M, N = shape
    sig = {"x_ptr": "*fp32", "amax_ptr": "*i32", "amin_ptr": "*i32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(arg_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    # Few distinct values: many ties, the smallest index must win (numpy's rule too).
    x = _rng().integers(-3, 4, size=(M, N)).astype(np.float32)
    n_out = M if axis == 1 else N
    amax, amin = poison(n_out, np.int32), poison(n_out, np.int32)
    k(x, amax, amin, M, N)
    np.testing.assert_array_equal(amax, x.argmax(axis))
    np.testing.assert_array_equal(amin, x.argmin(axis))


# ---------------------------------------------------------------------------------------------
# custom combine functions and multi-operand reductions


@triton.jit
def _xor_combine(a, b):
    return a ^ b


@triton.jit
def _absmax_combine(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def custom_kernel(xi_ptr, xf_ptr, oi_ptr, of_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    xi = tl.load(xi_ptr + r * N + c, mask=m, other=0)
    xf = tl.load(xf_ptr + r * N + c, mask=m, other=0.0)
    o = tl.arange(0, BM)
    tl.store(oi_ptr + o, tl.reduce(xi, 1, _xor_combine), mask=o < M)
    tl.store(of_ptr + o, tl.reduce(xf, 1, _absmax_combine), mask=o < M)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("shape", [(16, 64, 15, 61), (4, 256, 3, 256), (32, 4, 30, 3)])
def test_custom_combine(shape, num_warps):
    BM, BN, M, N = shape
    sig = {"xi_ptr": "*i32", "xf_ptr": "*fp32", "oi_ptr": "*i32", "of_ptr": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr"}
    k = compile_kernel(custom_kernel, sig, {"BM": BM, "BN": BN}, num_warps)
    rng = _rng()
    xi = rng.integers(-2**31, 2**31 - 1, size=(M, N), dtype=np.int64).astype(np.int32)
    xf = rng.standard_normal((M, N)).astype(np.float32)
    oi, of = poison(M, np.int32), poison(M, np.float32)
    k(xi, xf, oi, of, M, N)
    np.testing.assert_array_equal(oi, np.bitwise_xor.reduce(xi, axis=1))
    np.testing.assert_array_equal(of, np.abs(xf).max(axis=1))


@triton.jit
def _stats_combine(s1, c1, mx1, s2, c2, mx2):
    # (sum of fp32, count of i32, max of fp16): three operands of three types
    return s1 + s2, c1 + c2, tl.maximum(mx1, mx2)


@triton.jit
def multi_kernel(x_ptr, h_ptr, s_ptr, c_ptr, mx_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0.0)
    cnt = (x > 0).to(tl.int32)
    h = tl.load(h_ptr + r * N + c, mask=m, other=float("-inf"))
    s, n, mx = tl.reduce((x, cnt, h), AXIS, _stats_combine)
    o, om = _kept_index(M, N, BM, BN, AXIS)
    tl.store(s_ptr + o, s, mask=om)
    tl.store(c_ptr + o, n, mask=om)
    tl.store(mx_ptr + o, mx, mask=om)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
def test_multi_operand(axis, num_warps):
    BM, BN, M, N = 32, 64, 29, 63
    sig = {"x_ptr": "*fp32", "h_ptr": "*fp16", "s_ptr": "*fp32", "c_ptr": "*i32", "mx_ptr": "*fp16", "M": "i32",
           "N": "i32", "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(multi_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    rng = _rng()
    x = rng.standard_normal((M, N)).astype(np.float32)
    h = rng.standard_normal((M, N)).astype(np.float16)
    n_out = M if axis == 1 else N
    s, c, mx = poison(n_out, np.float32), poison(n_out, np.int32), poison(n_out, np.float16)
    k(x, h, s, c, mx, M, N)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(c, (x > 0).sum(axis))
    np.testing.assert_array_equal(mx, h.max(axis))


# ---------------------------------------------------------------------------------------------
# integer and fp16 reductions

_INT_TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "fp16": np.float16}


@triton.jit
def typed_kernel(x_ptr, s_ptr, mx_ptr, mn_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0)
    o = tl.arange(0, BM)
    tl.store(s_ptr + o, tl.sum(x, axis=1), mask=o < M)
    xm = tl.load(x_ptr + r * N + c, mask=m, other=-100)
    tl.store(mx_ptr + o, tl.max(xm, axis=1), mask=o < M)
    xn = tl.load(x_ptr + r * N + c, mask=m, other=100)
    tl.store(mn_ptr + o, tl.min(xn, axis=1), mask=o < M)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", ["i8", "i16", "i32", "i64", "fp16"])
def test_int_and_fp16(dtype, num_warps):
    BM, BN, M, N = 8, 128, 7, 100
    npt = _INT_TYPES[dtype]
    # tl.sum widens i8/i16 to i32; others keep their type.
    sum_t = {"i8": "i32", "i16": "i32"}.get(dtype, dtype)
    sum_np = {"i32": np.int32, "i64": np.int64, "fp16": np.float16}[sum_t]
    sig = {"x_ptr": f"*{dtype}", "s_ptr": f"*{sum_t}", "mx_ptr": f"*{dtype}", "mn_ptr": f"*{dtype}", "M": "i32",
           "N": "i32", "BM": "constexpr", "BN": "constexpr"}
    k = compile_kernel(typed_kernel, sig, {"BM": BM, "BN": BN}, num_warps)
    rng = _rng()
    if dtype == "fp16":
        x = rng.standard_normal((M, N)).astype(np.float16)
    else:
        x = rng.integers(-90, 90, size=(M, N)).astype(npt)
    s, mx, mn = poison(M, sum_np), poison(M, npt), poison(M, npt)
    k(x, s, mx, mn, M, N)
    if dtype == "fp16":
        np.testing.assert_allclose(s.astype(np.float64), x.astype(np.float64).sum(1), rtol=1e-2, atol=5e-2)
    else:
        np.testing.assert_array_equal(s, x.astype(np.int64).sum(1).astype(sum_np))
    np.testing.assert_array_equal(mx, x.max(1))
    np.testing.assert_array_equal(mn, x.min(1))


@triton.jit
def i64_wrap_kernel(x_ptr, o_ptr, BN: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BN))
    tl.store(o_ptr, tl.sum(x, axis=0))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_i64_large_values(num_warps):
    k = compile_kernel(i64_wrap_kernel, {"x_ptr": "*i64", "o_ptr": "*i64", "BN": "constexpr"}, {"BN": 256}, num_warps)
    x = _rng().integers(2**40, 2**50, size=256, dtype=np.int64)
    out = poison(1, np.int64)
    k(x, out)
    assert out[0] == x.sum()


# ---------------------------------------------------------------------------------------------
# scans


@triton.jit
def scan_kernel(x_ptr, s_ptr, p_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0.0)
    y = tl.load(x_ptr + r * N + c, mask=m, other=1.0)
    tl.store(s_ptr + r * N + c, tl.cumsum(x, axis=AXIS, reverse=REVERSE), mask=m)
    tl.store(p_ptr + r * N + c, tl.cumprod(y, axis=AXIS, reverse=REVERSE), mask=m)


def _np_scan(x, axis, reverse, fn):
    if reverse:
        return np.flip(fn(np.flip(x, axis), axis), axis)
    return fn(x, axis)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(16, 64, 13, 50), (1, 256, 1, 250), (128, 1, 100, 1), (4, 4, 4, 3),
                                   (8, 512, 5, 300)])
def test_cumsum_cumprod(shape, axis, reverse, num_warps):
    BM, BN, M, N = shape
    sig = {"x_ptr": "*fp32", "s_ptr": "*fp32", "p_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr",
           "BN": "constexpr", "AXIS": "constexpr", "REVERSE": "constexpr"}
    k = compile_kernel(scan_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis, "REVERSE": reverse}, num_warps)
    rng = _rng()
    # magnitudes near 1 keep long products in range; random signs and sizes keep sums honest
    x = (rng.choice([-1.0, 1.0], size=(M, N)) * rng.uniform(0.9, 1.1, size=(M, N))).astype(np.float32)
    s, p = poison((M, N), np.float32), poison((M, N), np.float32)
    k(x, s, p, M, N)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(s, _np_scan(x64, axis, reverse, np.cumsum), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p, _np_scan(x64, axis, reverse, np.cumprod), rtol=1e-4, atol=1e-30)


@triton.jit
def int_scan_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(o_ptr + offs, tl.cumsum(x, axis=0), mask=offs < n)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("block,n", [(1024, 1000), (64, 64), (16, 9)])
def test_int_cumsum_1d(block, n, num_warps):
    k = compile_kernel(int_scan_kernel, {"x_ptr": "*i32", "o_ptr": "*i32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": block}, num_warps)
    x = _rng().integers(-1000, 1000, size=n).astype(np.int32)
    out = poison(n, np.int32)
    k(x, out, n)
    np.testing.assert_array_equal(out, np.cumsum(x.astype(np.int64)).astype(np.int32))


@triton.jit
def _linrec_combine(a1, b1, a2, b2):
    # h -> a*h + b, applied first (a1, b1) then (a2, b2): associative, not commutative
    return a1 * a2, b1 * a2 + b2


@triton.jit
def linrec_kernel(a_ptr, b_ptr, oa_ptr, ob_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr,
                  REVERSE: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    a = tl.load(a_ptr + r * N + c, mask=m, other=1.0)
    b = tl.load(b_ptr + r * N + c, mask=m, other=0.0)
    ra, rb = tl.associative_scan((a, b), AXIS, _linrec_combine, reverse=REVERSE)
    tl.store(oa_ptr + r * N + c, ra, mask=m)
    tl.store(ob_ptr + r * N + c, rb, mask=m)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(8, 128, 7, 100), (64, 16, 50, 16)])
def test_associative_scan_noncommutative(shape, axis, reverse, num_warps):
    BM, BN, M, N = shape
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "oa_ptr": "*fp32", "ob_ptr": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr", "REVERSE": "constexpr"}
    k = compile_kernel(linrec_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis, "REVERSE": reverse}, num_warps)
    rng = _rng()
    a = rng.uniform(0.5, 1.0, size=(M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    oa, ob = poison((M, N), np.float32), poison((M, N), np.float32)
    k(a, b, oa, ob, M, N)
    ra, rb = linrec_reference(a, b, axis, reverse)
    np.testing.assert_allclose(oa, ra, rtol=1e-4, atol=1e-30)
    np.testing.assert_allclose(ob, rb, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# the generic (threadgroup memory) paths, forced on ordinary layouts


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_generic_paths(axis, reverse, num_warps, monkeypatch):
    monkeypatch.setattr(reduce_mod, "_reduce_plan", lambda lay, axis: None)
    monkeypatch.setattr(reduce_mod, "_scan_plan", lambda lay, axis: None)
    BM, BN, M, N = 16, 32, 13, 30
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "oa_ptr": "*fp32", "ob_ptr": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr", "REVERSE": "constexpr"}
    k = compile_kernel(linrec_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis, "REVERSE": reverse}, num_warps)
    assert "generic path" in k.msl
    rng = _rng()
    a = rng.uniform(0.5, 1.0, size=(M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    oa, ob = poison((M, N), np.float32), poison((M, N), np.float32)
    k(a, b, oa, ob, M, N)
    ra, rb = linrec_reference(a, b, axis, reverse)
    np.testing.assert_allclose(oa, ra, rtol=1e-4, atol=1e-30)
    np.testing.assert_allclose(ob, rb, rtol=1e-4, atol=1e-4)

    sig = {"x_ptr": "*fp32", "amax_ptr": "*i32", "amin_ptr": "*i32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(arg_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    assert "generic path" in k.msl
    x = rng.integers(-3, 4, size=(M, N)).astype(np.float32)
    n_out = M if axis == 1 else N
    amax, amin = poison(n_out, np.int32), poison(n_out, np.int32)
    k(x, amax, amin, M, N)
    np.testing.assert_array_equal(amax, x.argmax(axis))
    np.testing.assert_array_equal(amin, x.argmin(axis))


# ---------------------------------------------------------------------------------------------
# histogram and gather


@triton.jit
def hist_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.store(o_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("block,n,bins", [(1024, 1000, 16), (256, 256, 64), (32, 20, 256), (128, 77, 8)])
def test_histogram(block, n, bins, num_warps):
    k = compile_kernel(hist_kernel, {"x_ptr": "*i32", "o_ptr": "*i32", "n": "i32", "BLOCK": "constexpr",
                                     "BINS": "constexpr"}, {"BLOCK": block, "BINS": bins}, num_warps)
    # Include out-of-range values (negative and >= bins): they are dropped, as on GPUs.
    x = _rng().integers(-3, bins + 3, size=n).astype(np.int32)
    out = poison(bins, np.int32)
    k(x, out, n)
    ref = np.bincount(x[(x >= 0) & (x < bins)], minlength=bins)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def gather_kernel(x_ptr, i_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, IM: tl.constexpr, IN: tl.constexpr,
                  AXIS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    ioffs = tl.arange(0, IM)[:, None] * IN + tl.arange(0, IN)[None, :]
    idx = tl.load(i_ptr + ioffs)
    tl.store(o_ptr + ioffs, tl.gather(x, idx, AXIS))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(16, 32), (64, 8), (4, 128)])
def test_gather(shape, axis, num_warps):
    BM, BN = shape
    IM, IN = (2 * BM, BN) if axis == 0 else (BM, BN // 2)
    sig = {"x_ptr": "*fp32", "i_ptr": "*i32", "o_ptr": "*fp32", "BM": "constexpr", "BN": "constexpr",
           "IM": "constexpr", "IN": "constexpr", "AXIS": "constexpr"}
    k = compile_kernel(gather_kernel, sig, {"BM": BM, "BN": BN, "IM": IM, "IN": IN, "AXIS": axis}, num_warps)
    rng = _rng()
    x = rng.standard_normal((BM, BN)).astype(np.float32)
    idx = rng.integers(0, shape[axis], size=(IM, IN)).astype(np.int32)
    out = poison((IM, IN), np.float32)
    k(x, idx, out)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, axis=axis))


# ---------------------------------------------------------------------------------------------
# fused softmax (Triton's tutorial): the main user of reductions


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in range(row_start, n_rows, row_step):
        row_ptr = in_ptr + row_idx * in_stride
        offs = tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        row = tl.load(row_ptr + offs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        num = tl.exp(row_minus_max)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row_idx * out_stride + offs, num / den, mask=mask)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("n_cols", [1, 17, 128, 781, 1024, 2000])
def test_softmax(n_cols, num_warps):
    block = triton.next_power_of_2(n_cols)
    n_rows = 37
    sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_rows": "i32",
           "n_cols": "i32", "BLOCK_SIZE": "constexpr"}
    k = compile_kernel(softmax_kernel, sig, {"BLOCK_SIZE": block}, num_warps)
    x = (_rng().standard_normal((n_rows, n_cols)) * 4).astype(np.float32)
    out = poison((n_rows, n_cols), np.float32)
    k(out, x, n_cols, n_cols, n_rows, n_cols, grid=8)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


@triton.jit
def softmax_row_kernel(out_ptr, in_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # One row per program (the tutorial's first version): no loop around the reductions.
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("n_cols", [1, 17, 128, 781, 2000])
def test_softmax_one_row_per_program(n_cols, num_warps):
    block = triton.next_power_of_2(n_cols)
    k = compile_kernel(softmax_row_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32",
                                            "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": block}, num_warps)
    n_rows = 5
    x = (_rng().standard_normal((n_rows, n_cols)) * 4).astype(np.float32)
    out = poison((n_rows, n_cols), np.float32)
    k(out, x, n_cols, grid=n_rows)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


@triton.jit
def center_kernel(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    # Every thread uses the reduced values (broadcast back): all lanes/warps must agree.
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    x = tl.load(x_ptr + r * N + c, mask=m, other=0.0)
    y = x - tl.sum(x, axis=AXIS, keep_dims=True) + tl.max(x, axis=AXIS, keep_dims=True)
    tl.store(o_ptr + r * N + c, y, mask=m)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(16, 64, 13, 50), (128, 8, 100, 8), (4, 8, 4, 8)])
def test_reduce_broadcast_back(shape, axis, num_warps):
    BM, BN, M, N = shape
    sig = {"x_ptr": "*fp32", "o_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr",
           "AXIS": "constexpr"}
    k = compile_kernel(center_kernel, sig, {"BM": BM, "BN": BN, "AXIS": axis}, num_warps)
    rng = _rng()
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = poison((M, N), np.float32)
    k(x, out, M, N)
    x64 = x.astype(np.float64)
    pad = np.zeros((BM, BN))  # masked-out elements load as 0.0 and join the max
    pad[:M, :N] = x64
    pmax = pad.max(axis, keepdims=True)
    ref = x64 - x64.sum(axis, keepdims=True) + (pmax[:M] if axis == 1 else pmax[:, :N])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@triton.jit
def _or_combine(a, b):
    return a | b


@triton.jit
def any_kernel(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + r * N + c, mask=(r < M) & (c < N), other=0.0)
    hit = tl.reduce(x > 2.0, 1, _or_combine)  # i1 operands (bool shuffles)
    o = tl.arange(0, BM)
    tl.store(o_ptr + o, hit.to(tl.int32), mask=o < M)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_bool_reduce(num_warps):
    BM, BN, M, N = 32, 64, 30, 60
    k = compile_kernel(any_kernel, {"x_ptr": "*fp32", "o_ptr": "*i32", "M": "i32", "N": "i32", "BM": "constexpr",
                                    "BN": "constexpr"}, {"BM": BM, "BN": BN}, num_warps)
    x = _rng().standard_normal((M, N)).astype(np.float32)
    out = poison(M, np.int32)
    k(x, out, M, N)
    np.testing.assert_array_equal(out, (x > 2.0).any(1).astype(np.int32))
