"""tl.dot_scaled (tt.dot_scaled) through exact decoding in threadgroup memory (issue 7): e2m1 /
e4m3 / e5m2 / bf16 / fp16 operands, E8M0 scales on either side, e2m1 packed along K or along
M/N, against a float64 reference built from the formats' definitions."""

from __future__ import annotations

import math

import pytest
import torch
import triton
import triton.language as tl

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _e2m1(nib: torch.Tensor) -> torch.Tensor:
    v = torch.tensor(E2M1, dtype=torch.float64)[(nib & 7).long()]
    return torch.where((nib & 8) != 0, -v, v)


def _decode(x: torch.Tensor, fmt: str, k_pack: bool, k_dim: int) -> torch.Tensor:
    """Stored tensor -> float64 values (e2m1 unpacked: low nibble first, along K or M/N)."""
    if fmt == "e2m1":
        lo, hi = _e2m1(x & 15), _e2m1(x >> 4)
        dim = k_dim if k_pack else 1 - k_dim
        return torch.stack([lo, hi], dim=dim + 1).flatten(dim, dim + 1)
    if fmt in ("e4m3", "e5m2"):
        return x.view({"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]).double()
    return x.double()


def _scale(s: torch.Tensor, k: int) -> torch.Tensor:
    f = torch.where(s.long() == 0, torch.tensor(2.0 ** -127, dtype=torch.float64), torch.pow(2.0, s.double() - 127))
    return f.repeat_interleave(k // s.shape[1], dim=1)


@triton.jit
def _kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, out, M, N, BM: tl.constexpr, BN: tl.constexpr, AK: tl.constexpr,
            AM: tl.constexpr, BK: tl.constexpr, BNP: tl.constexpr, SK: tl.constexpr, FA: tl.constexpr,
            FB: tl.constexpr, A_SCALED: tl.constexpr, B_SCALED: tl.constexpr, KPA: tl.constexpr, KPB: tl.constexpr):
    ra = tl.arange(0, AM)[:, None]
    a = tl.load(a_ptr + ra * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BNP + tl.arange(0, BNP)[None, :])
    sa = None
    sb = None
    if A_SCALED:
        sa = tl.load(sa_ptr + tl.arange(0, BM)[:, None] * SK + tl.arange(0, SK)[None, :])
    if B_SCALED:
        sb = tl.load(sb_ptr + tl.arange(0, BN)[:, None] * SK + tl.arange(0, SK)[None, :])
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, lhs_k_pack=KPA, rhs_k_pack=KPB)
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    tl.store(out + rm * N + rn, c, mask=(rm < M) & (rn < N))


def _operand(fmt: str, shape, gen) -> torch.Tensor:
    if fmt in ("bf16", "fp16"):
        return torch.randn(shape, generator=gen).to(torch.bfloat16 if fmt == "bf16" else torch.float16)
    x = torch.randint(0, 256, shape, generator=gen, dtype=torch.int32).to(torch.uint8)
    if fmt == "e4m3":  # no NaNs (0x7f / 0xff)
        x = torch.where((x & 0x7F) == 0x7F, x ^ 1, x)
    if fmt == "e5m2":  # no inf/NaN
        x = torch.where((x & 0x7C) == 0x7C, x & 0xBB, x)
    return x


@pytest.mark.parametrize("fa, fb, a_scaled, b_scaled", [
    ("e2m1", "bf16", True, False), ("bf16", "e2m1", False, True), ("e4m3", "e5m2", True, True),
    ("e5m2", "fp16", True, False), ("e2m1", "e2m1", True, True), ("fp16", "e4m3", False, True),
])
@pytest.mark.parametrize("kpa, kpb", [(True, True), (False, False)])
def test_dot_scaled(mps_driver, fa, fb, a_scaled, b_scaled, kpa, kpb):
    if not kpa and fa != "e2m1" or not kpb and fb != "e2m1":
        pytest.skip("only e2m1 may be packed along M/N")
    dev = mps_driver.get_active_torch_device()
    gen = torch.Generator().manual_seed(int(torch.randint(0, 2**31, (1,))))
    BM, BN, K = 32, 16, 64
    M, N = 27, 13  # stored results masked to a ragged corner
    pa, pb = (2 if fa == "e2m1" else 1), (2 if fb == "e2m1" else 1)
    a_shape = (BM, K // pa) if kpa else (BM // pa, K)
    b_shape = (K // pb, BN) if kpb else (K, BN // pb)
    a, b = _operand(fa, a_shape, gen), _operand(fb, b_shape, gen)
    sa = torch.randint(110, 140, (BM, K // 32), generator=gen, dtype=torch.int32).to(torch.uint8)
    sb = torch.randint(110, 140, (BN, K // 32), generator=gen, dtype=torch.int32).to(torch.uint8)
    sa[0, 0] = 0  # 2^-127
    out = torch.full((M, N), math.nan, device=dev)
    _kernel[(1,)](a.to(dev), sa.to(dev), b.to(dev), sb.to(dev), out, M, N, BM=BM, BN=BN, AK=a_shape[1],
                  AM=a_shape[0], BK=b_shape[0], BNP=b_shape[1], SK=K // 32, FA=fa, FB=fb, A_SCALED=a_scaled,
                  B_SCALED=b_scaled, KPA=kpa, KPB=kpb)
    av = _decode(a, fa, kpa, 1)
    bv = _decode(b, fb, kpb, 0)
    if a_scaled:
        av = av * _scale(sa, K)
    if b_scaled:
        bv = bv * _scale(sb, K).T
    ref = (av @ bv)[:M, :N]
    torch.testing.assert_close(out.cpu().double(), ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))


@triton.jit
def _bf16_out_kernel(a_ptr, sa_ptr, b_ptr, out, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * BN + tl.arange(0, BN)[None, :])
    sa = tl.load(sa_ptr + tl.arange(0, BM)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, "e4m3", b, None, "e4m3")
    tl.store(out + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c.to(tl.bfloat16))


def test_dot_scaled_bf16_output_of_cancelling_sums(mps_driver):
    """Scaled e4m3 x e4m3 over the full E8M0 range Triton's tests use (2^-127 .. 2^15), stored as
    bf16: every element is within fp32 accumulation error (K u sum|ab|) plus one bf16 rounding
    of the exact float64 value. Terms reach 2^20 and cancel; Triton's test_scaled_dot compares
    such a case against torch's CPU bf16 matmul, which is less accurate (listed in
    tools/conformance/skips.txt with the measured values)."""
    dev = mps_driver.get_active_torch_device()
    gen = torch.Generator().manual_seed(int(torch.randint(0, 2**31, (1,))))
    BM = BN = K = 64
    a, b = _operand("e4m3", (BM, K), gen), _operand("e4m3", (K, BN), gen)
    sa = torch.randint(0, 143, (BM, K // 32), generator=gen, dtype=torch.int32).to(torch.uint8)
    out = torch.full((BM, BN), math.nan, dtype=torch.bfloat16, device=dev)
    _bf16_out_kernel[(1,)](a.to(dev), sa.to(dev), b.to(dev), out, K=K, BM=BM, BN=BN)
    av = _decode(a, "e4m3", True, 1) * _scale(sa, K)
    bv = _decode(b, "e4m3", True, 0)
    exact = av @ bv
    bound = K * 2.0**-24 * (av.abs() @ bv.abs()) + 2.0**-8 * exact.abs() + 2.0**-133
    err = (out.cpu().double() - exact).abs()
    assert torch.isfinite(out.cpu().double()).all()
    assert (err <= bound).all(), f"max excess {float((err - bound).max())} at {divmod(int((err - bound).argmax()), BN)}"
    # Most elements do not cancel: there the result is the correctly rounded bf16 of the exact value.
    rounded = exact.float().to(torch.bfloat16).double()
    assert float((out.cpu().double() == rounded).double().mean()) > 0.95
