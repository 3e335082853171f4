"""`tl.extra.libdevice` on the mps backend: every mapped function end to end (Triton front end with
the backend's module map -> TTGIR -> MSL -> simulator) against float64 numpy references, with
NaN/inf/signed-zero inputs where meaningful; fp16/bf16; the errors for what is not mapped."""

import math

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton_mps.compiler import CompilationError
from triton_mps.language import libdevice as mps_libdevice
from ttgir_harness import bf16_to_f32, compile_kernel, f32_to_bf16, poison

BLOCK = 64
N = 150  # not a multiple of BLOCK
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0]


@triton.jit
def f1_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def f2_kernel(x_ptr, y_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)), mask=m)


@triton.jit
def f3_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, FN(x, tl.load(y_ptr + offs, mask=m), tl.load(z_ptr + offs, mask=m)), mask=m)


_NP = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16, "i32": np.int32, "u32": np.uint32,
       "i64": np.int64, "u64": np.uint64, "i1": np.bool_}


def to_f64(x, t):
    return bf16_to_f32(x).astype(np.float64) if t == "bf16" else x.astype(np.float64)


def from_f64(x, t):
    with np.errstate(all="ignore"):
        return f32_to_bf16(x.astype(np.float32)) if t == "bf16" else x.astype(_NP[t])


def run(fn, args, arg_types, out_t, num_warps=2):
    """Run libdevice function `fn` elementwise over `args` (numpy arrays of length N)."""
    kernel = {1: f1_kernel, 2: f2_kernel, 3: f3_kernel}[len(args)]
    names = ["x_ptr", "y_ptr", "z_ptr"][:len(args)]
    sig = {n: f"*{t}" for n, t in zip(names, arg_types, strict=True)}
    sig.update({"out_ptr": f"*{out_t}", "n": "i32", "FN": "constexpr", "BLOCK": "constexpr"})
    k = compile_kernel(kernel, sig, {"FN": fn, "BLOCK": BLOCK}, num_warps)
    if out_t == "i1":
        out = np.full(N, 0x5A, np.uint8).view(np.bool_)
    elif out_t == "bf16":
        out = np.full(N, 0x7FC1, np.uint16)
    else:
        out = poison(N, _NP[out_t])
    k(*args, out, N, grid=triton.cdiv(N, BLOCK))
    return out


def _vec(f):
    return lambda *a: np.vectorize(f, otypes=[np.float64])(*a)


def _saturate(x):
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


# name -> (float64 reference, input domain, relative tolerance in fp32 (ulp-level unless noted))
# domains: "any" normal*3, "pos" (0.01, 10), "unit" (-0.99, 0.99), "ge1" [1, 10], "small" normal*0.5
UNARY = {
    "floor": (np.floor, "any", 0), "ceil": (np.ceil, "any", 0), "trunc": (np.trunc, "any", 0),
    "round": (lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "half", 0), "rint": (np.rint, "half", 0),
    "nearbyint": (np.rint, "half", 0), "exp": (np.exp, "any", 2e-7), "exp2": (np.exp2, "any", 2e-7),
    "exp10": (lambda x: 10.0 ** x, "any", 1e-6), "expm1": (np.expm1, "small", 1e-6), "log": (np.log, "pos", 2e-7),
    "log2": (np.log2, "pos", 2e-7), "log10": (np.log10, "pos", 2e-7), "log1p": (np.log1p, "small_pos", 1e-6),
    "sqrt": (np.sqrt, "pos", 1.2e-7), "sqrt_rn": (np.sqrt, "pos", 1.2e-7),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "pos", 2e-7), "rsqrt_rn": (lambda x: 1 / np.sqrt(x), "pos", 2e-7),
    "rcp_rn": (lambda x: 1 / x, "any", 1.2e-7),
    "sin": (np.sin, "any", 2e-7), "cos": (np.cos, "any", 2e-7), "tan": (np.tan, "unit", 2e-7),
    "sinpi": (lambda x: np.sin(np.pi * x), "unit", 1e-6), "cospi": (lambda x: np.cos(np.pi * x), "unit", 1e-6),
    "asin": (np.arcsin, "unit", 2e-7), "acos": (np.arccos, "unit", 2e-7), "atan": (np.arctan, "any", 2e-7),
    "sinh": (np.sinh, "any", 2e-7), "cosh": (np.cosh, "any", 2e-7), "tanh": (np.tanh, "any", 2e-7),
    "asinh": (np.arcsinh, "any", 2e-7), "acosh": (np.arccosh, "ge1", 2e-7), "atanh": (np.arctanh, "unit", 2e-7),
    "erf": (_vec(math.erf), "any", 1e-6), "erfc": (_vec(math.erfc), "any", 1e-5), "cbrt": (np.cbrt, "any", 2e-7),
    "rcbrt": (lambda x: 1 / np.cbrt(x), "any", 3e-7), "saturatef": (_saturate, "unit2", 0),
    "abs": (np.abs, "any", 0), "fabs": (np.abs, "any", 0),
    "fast_expf": (np.exp, "any", 1e-6), "fast_exp10f": (lambda x: 10.0 ** x, "any", 1e-6),
    "fast_logf": (np.log, "pos", 1e-6), "fast_log2f": (np.log2, "pos", 1e-6), "fast_log10f": (np.log10, "pos", 1e-6),
    "fast_sinf": (np.sin, "any", 1e-6), "fast_cosf": (np.cos, "any", 1e-6), "fast_tanf": (np.tan, "unit", 1e-6),
    "fast_tanhf": (np.tanh, "any", 1e-6),
}


def _domain(rng, dom):
    x = {
        "any": lambda: rng.standard_normal(N) * 3, "small": lambda: rng.standard_normal(N) * 0.5,
        "pos": lambda: rng.uniform(0.01, 10, N), "unit": lambda: rng.uniform(-0.99, 0.99, N),
        "unit2": lambda: rng.uniform(-0.5, 1.5, N), "ge1": lambda: rng.uniform(1, 10, N),
        "small_pos": lambda: rng.uniform(-0.9, 10, N), "half": lambda: rng.integers(-20, 20, N) * 0.5,
    }[dom]()
    if dom == "small":
        x[5:10] = [1e-9, -1e-7, 3e-6, -2e-5, 40.0]  # expm1's small-argument path and a large one
    if dom == "small_pos":
        x[5:9] = [1e-9, -1e-7, 3e-6, -2e-5]
    return x


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_fp32(name):
    ref_fn, dom, rtol = UNARY[name]
    rng = np.random.default_rng()
    x = _domain(rng, dom)
    x[:5] = SPECIAL
    a = x.astype(np.float32)
    out = run(getattr(mps_libdevice, name), [a], ["fp32"], "fp32")
    with np.errstate(all="ignore"):
        ref = ref_fn(a.astype(np.float64))
    ref32 = ref.astype(np.float32).astype(np.float64)
    # rtol on the exact value plus one fp32 rounding; a small atol where results pass near 0
    atol = 0 if rtol == 0 else 1e-6 if name in ("sinpi", "cospi", "sin", "cos", "tan") else 1e-30
    np.testing.assert_allclose(out.astype(np.float64), ref32, rtol=rtol + 6e-8 * (rtol > 0), atol=atol)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref32))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(n for n in UNARY if not n.startswith("fast_")))
def test_unary_half(name, dtype):
    """Computed in float, rounded once: within one unit in the last place of the type."""
    ref_fn, dom, _ = UNARY[name]
    rng = np.random.default_rng()
    x = _domain(rng, dom)
    x[:5] = SPECIAL
    a = from_f64(x, dtype)
    out = run(getattr(mps_libdevice, name), [a], [dtype], dtype)
    xa = to_f64(a, dtype)
    with np.errstate(all="ignore"):
        ref = to_f64(from_f64(ref_fn(xa), dtype), dtype)
    ulp = {"fp16": 2.0 ** -10, "bf16": 2.0 ** -7}[dtype]
    atol = 2e-3 if name in ("sinpi", "cospi") else 0
    np.testing.assert_allclose(to_f64(out, dtype), ref, rtol=ulp * 1.01, atol=atol)


def _fdim(a, b):
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a > b, a - b, 0.0))


def _remainder(a, b):
    return np.array([math.remainder(x, y) if y != 0 and not math.isinf(x) else math.nan
                     for x, y in zip(a, b, strict=True)])


# name -> (float64 reference, domain of y, rtol)
BINARY = {
    "pow": (np.power, "pos", 1e-6), "atan2": (np.arctan2, "any", 2e-7), "fmod": (np.fmod, "nz", 0),
    "remainder": (_remainder, "nz", 0), "fmin": (np.fmin, "any", 0), "fmax": (np.fmax, "any", 0),
    "copysign": (np.copysign, "any", 0), "fdim": (_fdim, "any", 1.2e-7), "hypot": (np.hypot, "any", 2e-7),
    "rhypot": (lambda a, b: 1 / np.hypot(a, b), "any", 3e-7), "div_rn": (np.divide, "nz", 1e-30),
    "fast_dividef": (np.divide, "nz", 1e-6), "fast_powf": (np.power, "pos", 1e-6), "add_rn": (np.add, "any", 1e-30),
    "sub_rn": (np.subtract, "any", 1e-30), "mul_rn": (np.multiply, "any", 1e-30),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_fp32(name):
    ref_fn, ydom, rtol = BINARY[name]
    rng = np.random.default_rng()
    x = rng.standard_normal(N) * 3
    y = rng.standard_normal(N) * 3
    if name in ("pow", "fast_powf"):
        x = rng.uniform(0.01, 5, N)
    if ydom == "nz":
        y = np.where(np.abs(y) < 0.25, 0.75, y)
    if name == "remainder":
        x[20:24], y[20:24] = [2.5, -2.5, 3.5, 7.0], [1.0, 1.0, 1.0, 2.0]  # ties round to even
    x[:5], y[:5] = SPECIAL, [1.0, 2.0, np.nan, -0.0, np.inf]
    x[5:10], y[5:10] = [1.0, 2.0, -1.0, 0.0, np.inf], SPECIAL
    if name == "hypot":
        x[10:12], y[10:12] = [3e30, 3e-30], [4e30, 4e-30]  # no overflow / underflow of the squares
    if name in ("pow", "fast_powf"):
        x[:10] = np.abs(x[:10])
    a, b = x.astype(np.float32), y.astype(np.float32)
    out = run(getattr(mps_libdevice, name), [a, b], ["fp32", "fp32"], "fp32")
    with np.errstate(all="ignore"):
        ref = ref_fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol + 6e-8 * (rtol > 0), atol=0)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["pow", "atan2", "fmod", "hypot", "div_rn", "fmax", "copysign"])
def test_binary_half(name, dtype):
    ref_fn = BINARY[name][0]
    rng = np.random.default_rng()
    x = rng.uniform(0.1, 4, N) if name == "pow" else rng.standard_normal(N) * 3
    y = rng.standard_normal(N)
    y = np.where(np.abs(y) < 0.25, 0.75, y)
    a, b = from_f64(x, dtype), from_f64(y, dtype)
    out = run(getattr(mps_libdevice, name), [a, b], [dtype, dtype], dtype)
    with np.errstate(all="ignore"):
        ref = to_f64(from_f64(ref_fn(to_f64(a, dtype), to_f64(b, dtype)), dtype), dtype)
    ulp = {"fp16": 2.0 ** -10, "bf16": 2.0 ** -7}[dtype]
    np.testing.assert_allclose(to_f64(out, dtype), ref, rtol=ulp * 1.01, atol=0)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_fma(dtype):
    rng = np.random.default_rng()
    x, y, z = (from_f64(rng.standard_normal(N) * 3, dtype) for _ in range(3))
    out = run(mps_libdevice.fma, [x, y, z], [dtype] * 3, dtype)
    ref = to_f64(x, dtype) * to_f64(y, dtype) + to_f64(z, dtype)  # exact in float64 for these inputs
    np.testing.assert_array_equal(out, from_f64(ref, dtype))


def test_pow_int_exponent():
    rng = np.random.default_rng()
    x = (rng.standard_normal(N) * 2).astype(np.float32)  # negative bases are fine with an int exponent
    e = rng.integers(-6, 7, N).astype(np.int32)
    out = run(mps_libdevice.pow, [x, e], ["fp32", "i32"], "fp32")
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), e.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=2e-6)


def test_ldexp_scalbn_ilogb():
    rng = np.random.default_rng()
    x = (rng.standard_normal(N) * 100).astype(np.float32)
    e = rng.integers(-20, 20, N).astype(np.int32)
    for fn in (mps_libdevice.ldexp, mps_libdevice.scalbn):
        np.testing.assert_array_equal(run(fn, [x, e], ["fp32", "i32"], "fp32"), np.ldexp(x, e))
    x[:6] = [0.0, np.nan, np.inf, -np.inf, 1e-40, -3e-39]  # 0/NaN -> INT_MIN, inf -> INT_MAX, subnormals
    got = run(mps_libdevice.ilogb, [x], ["fp32"], "i32")
    ref = [-2**31, -2**31, 2**31 - 1, 2**31 - 1] + [math.frexp(float(v))[1] - 1 for v in x[4:]]
    assert got.tolist() == ref


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_predicates(dtype):
    rng = np.random.default_rng()
    x = rng.standard_normal(N) * 3
    x[:5] = SPECIAL
    a = from_f64(x, dtype)
    xa = to_f64(a, dtype)
    for name, ref, out_t in [("isnan", np.isnan(xa), "i1"), ("isinf", np.isinf(xa), "i1"),
                             ("finitef", np.isfinite(xa), "i1"), ("signbit", np.signbit(xa), "i32")]:
        got = run(getattr(mps_libdevice, name), [a], [dtype], out_t)
        assert got.astype(np.int64).tolist() == ref.astype(np.int64).tolist(), name


def _bits(v, n):
    return v & ((1 << n) - 1)


def _signed(v, n):
    v = _bits(v, n)
    return v - (1 << n) if v >> (n - 1) else v


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_functions(dtype):
    rng = np.random.default_rng()
    bits = 32 if dtype == "i32" else 64
    info = np.iinfo(_NP[dtype])
    a = rng.integers(info.min, info.max, N, dtype=_NP[dtype], endpoint=True)
    a[:4] = [0, -1, info.min, 1]
    a[4:20] >>= rng.integers(0, bits - 1, 16).astype(_NP[dtype])  # various leading-zero counts
    av = a.tolist()
    checks = {
        "abs": ("same", [_signed(abs(v), bits) for v in av]),
        "clz": ("i32", [bits - _bits(v, bits).bit_length() for v in av]),
        "popc": ("i32", [bin(_bits(v, bits)).count("1") for v in av]),
        "ffs": ("i32", [(_bits(v, bits) & -_bits(v, bits)).bit_length() for v in av]),
        "brev": ("same", [_signed(int(format(_bits(v, bits), f"0{bits}b")[::-1], 2), bits) for v in av]),
    }
    for name, (out_t, ref) in checks.items():
        got = run(getattr(mps_libdevice, name), [a], [dtype], dtype if out_t == "same" else out_t)
        assert got.tolist() == ref, name


@pytest.mark.parametrize("dtype", ["i32", "u32", "i64", "u64"])
def test_mulhi_hadd(dtype):
    rng = np.random.default_rng()
    npt = _NP[dtype]
    info = np.iinfo(npt)
    bits = info.bits
    a = rng.integers(info.min, info.max, N, dtype=npt, endpoint=True)
    b = rng.integers(info.min, info.max, N, dtype=npt, endpoint=True)
    a[:3], b[:3] = [info.max, info.min, info.max], [info.max, info.min, 1]
    got = run(mps_libdevice.mulhi, [a, b], [dtype, dtype], dtype)
    wrap = (lambda v: _signed(v, bits)) if info.min < 0 else (lambda v: _bits(v, bits))
    assert got.tolist() == [wrap((x * y) >> bits) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    if bits == 32:
        for name, extra in (("hadd", 0), ("rhadd", 1)):
            got = run(getattr(mps_libdevice, name), [a, b], [dtype, dtype], dtype)
            assert got.tolist() == [(x + y + extra) >> 1 for x, y in zip(a.tolist(), b.tolist(), strict=True)], name


@pytest.mark.parametrize("short,out_t", [("int", "i32"), ("uint", "u32"), ("ll", "i64"), ("ull", "u64")])
def test_float_to_int_rounding(short, out_t):
    rng = np.random.default_rng()
    info = np.iinfo(_NP[out_t])
    x = rng.uniform(-1000, 1000, N)
    x[:8] = [2.5, -2.5, 3.5, -0.5, np.nan, 1e30, -1e30, np.inf]  # ties; NaN -> 0; out of range saturates
    a = x.astype(np.float32)
    for mode, rnd in (("rn", np.rint), ("rz", np.trunc), ("rd", np.floor), ("ru", np.ceil)):
        got = run(getattr(mps_libdevice, f"float2{short}_{mode}"), [a], ["fp32"], out_t)
        r = rnd(a.astype(np.float64))
        ref = [0 if math.isnan(v) else int(min(max(v, info.min), info.max)) for v in r]
        assert got.tolist() == ref, mode
    got = run(mps_libdevice.llround, [a], ["fp32"], "i64")
    r = np.copysign(np.floor(np.abs(a.astype(np.float64)) + 0.5), a)
    assert got.tolist() == [0 if math.isnan(v) else int(min(max(v, -2**63), 2**63 - 1)) for v in r]


def test_int_to_float_and_bitcasts():
    rng = np.random.default_rng()
    i = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    u = i.view(np.uint32)
    np.testing.assert_array_equal(run(mps_libdevice.int2float_rn, [i], ["i32"], "fp32"), i.astype(np.float32))
    np.testing.assert_array_equal(run(mps_libdevice.uint2float_rn, [u], ["u32"], "fp32"), u.astype(np.float32))
    np.testing.assert_array_equal(run(mps_libdevice.int_as_float, [i], ["i32"], "fp32").view(np.int32), i)
    np.testing.assert_array_equal(run(mps_libdevice.uint_as_float, [u], ["u32"], "fp32").view(np.uint32), u)
    f = i.view(np.float32)
    np.testing.assert_array_equal(run(mps_libdevice.float_as_int, [f], ["fp32"], "i32"), i)
    np.testing.assert_array_equal(run(mps_libdevice.float_as_uint, [f], ["fp32"], "u32"), u)


def test_nextafter():
    rng = np.random.default_rng()
    x = (rng.standard_normal(N) * 3).astype(np.float32)
    y = (rng.standard_normal(N) * 3).astype(np.float32)
    x[:6], y[:6] = [0.0, -0.0, 1.0, np.nan, 2.0, np.float32(1e-45)], [1.0, -1.0, 1.0, 1.0, np.nan, 0.0]
    got = run(mps_libdevice.nextafter, [x, y], ["fp32", "fp32"], "fp32")
    np.testing.assert_array_equal(got, np.nextafter(x, y))


# ---- how names resolve -------------------------------------------------------------------------


@triton.jit
def resolve_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.extra.libdevice.tanh(x) + libdevice.log1p(tl.abs(x)) + tl.extra.cuda.libdevice.erf(x)
    tl.store(out_ptr + offs, y, mask=m)


def test_libdevice_resolves_through_module_map():
    """`tl.extra.libdevice.f`, `from ... import libdevice`, and CUDA's module all reach our symbols."""
    x = (np.random.default_rng().standard_normal(N) * 2).astype(np.float32)
    k = compile_kernel(resolve_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": BLOCK}, 4)
    assert "tmps_tanh" in k.mod.str_nodebug() and "__nv_" not in k.mod.str_nodebug()
    out = poison(N, np.float32)
    k(x, out, N, grid=triton.cdiv(N, BLOCK))
    xd = x.astype(np.float64)
    np.testing.assert_allclose(out, np.tanh(xd) + np.log1p(np.abs(xd)) + _vec(math.erf)(xd), rtol=2e-6, atol=2e-6)


def test_every_mapped_name_has_a_lowering():
    """Each symbol the language module can emit (it makes every function from the math table's
    LIBDEVICE) has a Metal expression in the compiler's table."""
    from triton_mps.compiler.ops import libdevice
    from triton_mps.math_functions import LIBDEVICE

    assert set(mps_libdevice.MAPPED) == set(LIBDEVICE)
    symbols = {sym for table in LIBDEVICE.values() for sym, _ in table.values()}
    lowered = set(libdevice.SYMBOLS)
    assert symbols and symbols <= lowered, symbols - lowered
    assert len(mps_libdevice.MAPPED) > 100


def test_every_cuda_libdevice_name_is_mapped():
    """Every function of Triton's CUDA libdevice module (the names kernels written for NVIDIA use)."""
    import triton.language.extra.cuda.libdevice as cuda_lib

    names = {n for n, v in vars(cuda_lib).items()
             if callable(v) and not n.startswith("_") and getattr(v, "__module__", "") == cuda_lib.__name__}
    assert len(names) > 150
    assert names - set(mps_libdevice.MAPPED) == set()


@triton.jit
def fp64_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.saturatef(tl.load(x_ptr).to(tl.float64)).to(tl.float32))


def test_fp64_rejected_by_front_end():
    """saturatef has no float64 version (as in CUDA; exp, sinpi, hypot, ... do: test_fp64_math*.py)."""
    with pytest.raises(triton.CompilationError,
                       match=r"libdevice.saturatef on the mps backend takes .*Metal has no fp64"):
        compile_kernel(fp64_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {}, 1)


@triton.jit
def unmapped_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, libdevice.no_such_function(x, x, x))


def test_unmapped_name_rejected_by_front_end():
    with pytest.raises(triton.CompilationError,
                       match=r"libdevice.no_such_function is not available on the mps backend"):
        compile_kernel(unmapped_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {}, 1)


@tl.core.extern
def cuda_j0(x, _semantic=None):
    f32 = tl.core.dtype("fp32")
    return tl.core.extern_elementwise("", "", [x], {(f32, ): ("__nv_j0f", f32)}, is_pure=True, _semantic=_semantic)


@triton.jit
def foreign_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    y = cuda_j0(x)
    tl.store(out_ptr, y)


def test_unknown_symbol_is_a_compilation_error():
    with pytest.raises(CompilationError) as info:
        compile_kernel(foreign_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {}, 1)
    err = info.value
    assert "__nv_j0f" in str(err) and err.kernel == "foreign_kernel" and err.op == "tt.extern_elementwise"
    assert err.line == foreign_kernel.fn.__code__.co_firstlineno + 3
