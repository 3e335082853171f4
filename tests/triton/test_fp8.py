"""fp8 emulated as 8-bit storage with exact software conversions (issue 7): every code of every
format upcast, random and edge values downcast (RTNE and RTZ, saturation, NaN), arithmetic and
loads/stores, against torch's own fp8 types (and our Python model of the formats torch lacks)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton_mps.compiler.mslib import fp8

# torch dtype, Triton dtype, MLIR name
FORMATS = [
    (torch.float8_e4m3fn, tl.float8e4nv, "f8E4M3FN"),
    (torch.float8_e5m2, tl.float8e5, "f8E5M2"),
    (torch.float8_e4m3fnuz, tl.float8e4b8, "f8E4M3FNUZ"),
    (torch.float8_e5m2fnuz, tl.float8e5b16, "f8E5M2FNUZ"),
]
IDS = [f[2] for f in FORMATS]


@triton.jit
def _convert(src, dst, n, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(src + offs, mask=m)
    tl.store(dst + offs, x.to(dst.dtype.element_ty, fp_downcast_rounding=ROUND), mask=m)


def _dev(mps_driver):
    return mps_driver.get_active_torch_device()


def _launch_convert(x, out, rounding=None, block=128):
    n = x.numel()
    _convert[(triton.cdiv(n, block),)](x, out, n, rounding, BLOCK=block)


def _same_floats(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = a.float().cpu(), b.float().cpu()
    nan = torch.isnan(b)
    return torch.equal(torch.isnan(a), nan) and torch.equal(a[~nan], b[~nan])


@pytest.mark.parametrize("dst", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_upcast_every_code(mps_driver, fmt, dst):
    tdt, _, name = fmt
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    # run twice the codes (300 of them, not a multiple of the block) into a poisoned output
    src = torch.cat([codes, codes[:44]]).view(tdt).to(_dev(mps_driver))
    out = torch.full((300,), 12345.0, dtype=dst, device=src.device)
    _launch_convert(src, out)
    ref = torch.cat([codes, codes[:44]]).view(tdt).float().to(dst)
    assert _same_floats(out, ref)
    model = torch.tensor([fp8.decode(fp8.FORMATS[name], int(c)) for c in codes])
    assert _same_floats(model, codes.view(tdt).float())


def _edge_values(fmt_name: str, rng) -> torch.Tensor:
    """Random floats over the format's range plus every midpoint between neighbouring codes
    (the ties), +-0, subnormals and just past the largest value."""
    f = fp8.FORMATS[fmt_name]
    finite = sorted({fp8.decode(f, c) for c in range(128) if math.isfinite(fp8.decode(f, c))})
    mids = [(a + b) / 2 for a, b in zip(finite, finite[1:], strict=False)]
    vals = finite + mids + [v * (1 + 2**-20) for v in mids] + [v * (1 - 2**-20) for v in mids]
    vals += list(rng.standard_normal(700) * f.max_value / 8) + list(rng.uniform(-1, 1, 300) * 2.0 ** f.emin)
    vals += [-v for v in vals]
    return torch.tensor(vals, dtype=torch.float32)


@pytest.mark.parametrize("src_dt", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_downcast_rtne_matches_torch(mps_driver, rng, fmt, src_dt):
    tdt, _, name = fmt
    x = _edge_values(name, rng).to(src_dt)
    out = torch.full(x.shape, 0x55, dtype=torch.uint8).view(tdt).to(_dev(mps_driver))
    _launch_convert(x.to(out.device), out)
    ref = x.float().to(tdt)  # in range: torch rounds to nearest even too
    got = out.cpu().view(torch.uint8)
    want = ref.view(torch.uint8)
    if "fnuz" in name.lower():
        want = torch.where(want == 0x80, torch.zeros_like(want), want)  # fnuz -0 -> +0 (0x80 is NaN)
        want = torch.where((x.float() == 0) | (ref.float() == 0), torch.zeros_like(want), want)
    bad = (got != want).nonzero()
    assert bad.numel() == 0, (f"{bad.numel()} mismatches, first x={x[bad[0]].item()!r} "
                              f"got {got[bad[0]]} want {want[bad[0]]}")
    model = torch.tensor([fp8.encode(fp8.FORMATS[name], float(v)) for v in x.float()], dtype=torch.uint8)
    assert torch.equal(model, got)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_downcast_rtz(mps_driver, rng, fmt):
    tdt, _, name = fmt
    x = _edge_values(name, rng)
    out = torch.zeros(x.shape, dtype=tdt, device=_dev(mps_driver))
    _launch_convert(x.to(out.device), out, rounding="rtz")
    got = out.cpu().float()
    # round toward zero: never larger in magnitude, same sign, and the next code away from zero
    # is larger in magnitude than x
    assert torch.all(got.abs() <= x.abs())
    f = fp8.FORMATS[name]
    for v, g in zip(x.tolist()[:400], got.tolist()[:400], strict=True):
        assert g == fp8.decode(f, fp8.encode(f, v, "rtz"))
        code = fp8.encode(f, abs(v), "rtz")
        if code < f.max_code:
            assert fp8.decode(f, code + 1) > abs(v)


@pytest.mark.parametrize("src_dt", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_downcast_saturates_and_keeps_nan(mps_driver, fmt, src_dt):
    tdt, _, name = fmt
    f = fp8.FORMATS[name]
    big = min(f.max_value * 4, float(torch.finfo(src_dt).max))
    x = torch.tensor([big, -big, math.inf, -math.inf, math.nan, f.max_value, -f.max_value], dtype=src_dt)
    out = torch.zeros(7, dtype=tdt, device=_dev(mps_driver))
    _launch_convert(x.to(out.device), out)
    got = out.cpu().float()
    m = f.max_value
    assert got[:4].tolist() == [m, -m, m, -m]
    assert math.isnan(got[4].item())
    assert got[5:].tolist() == [m, -m]


@triton.jit
def _arith(a, b, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(a + offs, mask=m)
    y = tl.load(b + offs, mask=m)
    z = tl.where(x > y, x * y, tl.abs(x) + y - 0.5)  # fp8 arithmetic in the frontend's types
    tl.store(out + offs, z, mask=m)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_arithmetic(mps_driver, rng, fmt):
    tdt, _, _ = fmt
    n = 1000
    a = torch.tensor(rng.standard_normal(n) * 4, dtype=torch.float32).to(tdt)
    b = torch.tensor(rng.standard_normal(n) * 4, dtype=torch.float32).to(tdt)
    dev = _dev(mps_driver)
    out = torch.full((n,), 0x55, dtype=torch.uint8).view(tdt).to(dev)
    _arith[(triton.cdiv(n, 256),)](a.to(dev), b.to(dev), out, n, BLOCK=256)
    af, bf = a.float(), b.float()
    # each fp8 op rounds to fp8 (the constant 0.5 is exact in every format)
    r = lambda t: t.to(tdt).float()  # noqa: E731
    ref = torch.where(af > bf, r(af * bf), r(r(r(af.abs()) + bf) - 0.5))
    assert _same_floats(out.cpu().float(), ref)


@triton.jit
def _e4b15_roundtrip(src, f16_out, back, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(src + offs, mask=m)
    h = x.to(tl.float16)
    tl.store(f16_out + offs, h, mask=m)
    tl.store(back + offs, h.to(tl.float32).to(tl.float8e4b15), mask=m)


def _e4b15_model_up(c: int) -> float:
    bits = ((c & 0x80) << 8) | ((c & 0x7F) << 7)
    return float(np.array([bits], np.uint16).view(np.float16)[0])


def test_fp8e4b15_cuda_semantics(mps_driver):
    """fp8e4b15 (i8 in MLIR, converted in the front end): every code upcasts as CUDA's PTX does
    and every value that is not 0x7f/0xff (1.875, above the saturation bound 1.75) round-trips."""
    dev = _dev(mps_driver)
    codes = torch.arange(256, dtype=torch.int32).to(torch.int8)
    h = torch.full((256,), 9.0, dtype=torch.float16, device=dev)
    back = torch.full((256,), 0x55, dtype=torch.int8, device=dev)
    _e4b15_roundtrip[(2,)](triton.reinterpret(codes.to(dev), tl.float8e4b15), h,
                           triton.reinterpret(back, tl.float8e4b15), 256, BLOCK=128)
    want = torch.tensor([_e4b15_model_up(c) for c in range(256)], dtype=torch.float16)
    assert torch.equal(h.cpu(), want)
    want_back = codes.clone()
    want_back[0x7F] = 0x7E  # +1.875 saturates to +1.75
    want_back[0xFF] = -2  # 0xfe: -1.75
    assert torch.equal(back.cpu(), want_back)


@triton.jit
def _dot(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    z = tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], z, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("shape", [(16, 16, 16, 16, 16, 16), (13, 21, 30, 16, 32, 32), (5, 3, 7, 8, 4, 8)])
@pytest.mark.parametrize("fa, fb", [(0, 0), (1, 1), (0, 1), (2, 3)])
def test_dot(mps_driver, rng, shape, fa, fb):
    """fp8 x fp8 dot (same or mixed formats) into fp32: the operands widen exactly, so the result
    is the fp32 product of the fp8 values (sizes not multiples of the blocks, masked loads)."""
    M, N, K, BM, BN, BK = shape
    ta, tb = FORMATS[fa][0], FORMATS[fb][0]
    dev = _dev(mps_driver)
    a = torch.tensor(rng.standard_normal((M, K)), dtype=torch.float32).to(ta)
    b = torch.tensor(rng.standard_normal((K, N)), dtype=torch.float32).to(tb)
    c = torch.full((M, N), math.nan, device=dev)
    _dot[(1,)](a.to(dev), b.to(dev), c, M, N, K, BM=BM, BN=BN, BK=BK)
    ref = a.float().double() @ b.float().double()
    torch.testing.assert_close(c.cpu().double(), ref, rtol=1e-5, atol=1e-5)
