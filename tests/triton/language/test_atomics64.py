"""64-bit tt.atomic_rmw / tt.atomic_cas through the per-address lock table (issue 7): every
kind on i64/u64, contended (many lanes and programs on few addresses) and not, with the
returned old values checked for a consistent serial order."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
import triton
import triton.language as tl
from tmps_testing import rmw_kernel


def _dev(mps_driver):
    return mps_driver.get_active_torch_device()


def _values(kind: str, n: int, signed: bool) -> torch.Tensor:
    if kind == "add":  # non-negative, so the olds of one address increase strictly
        return torch.randint(1, 2**40, (n,), dtype=torch.int64)
    if kind in ("and", "or", "xor"):
        return torch.randint(-2**62, 2**62, (n,), dtype=torch.int64)
    lo = -2**62 if signed else 0
    return torch.randint(lo, 2**62, (n,), dtype=torch.int64) * (1 if signed else 2) + (0 if signed else 1)


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("kind", ["add", "max", "min", "xchg", "and", "or", "xor"])
@pytest.mark.parametrize("naddr", [1, 5, 1000])
def test_rmw64(mps_driver, kind, signed, naddr):
    if not signed and kind not in ("max", "min"):
        pytest.skip("add/xchg/bitwise do not depend on signedness")
    n = 1000  # not a multiple of the block: the tail is masked
    dt = torch.int64 if signed else torch.uint64
    v = _values(kind, n, signed)
    init = torch.randint(-2**62, 2**62, (naddr,), dtype=torch.int64)
    if kind == "add":
        init = torch.randint(0, 2**40, (naddr,), dtype=torch.int64)
    dev = _dev(mps_driver)
    p, vv = init.clone().view(dt).to(dev), v.view(dt).to(dev)
    o = torch.full((n,), 0x5555, dtype=dt, device=dev)
    rmw_kernel[(triton.cdiv(n, 128),)](p, vv, o, n, NB=naddr, KIND=kind, BLOCK=128)
    final, olds = p.cpu().view(torch.int64), o.cpu().view(torch.int64)

    def u(x: int) -> int:  # the unsigned reading of a 64-bit value
        return x & ((1 << 64) - 1)

    for a in range(naddr):
        vs, os_ = v[a::naddr].tolist(), olds[a::naddr].tolist()
        i0, f = int(init[a]), int(final[a])
        if kind == "add":
            assert u(f) == u(i0 + sum(vs))
            seq = sorted(os_)  # a serial order: olds are the prefix sums of some permutation
            assert seq[0] == i0
            diffs = Counter([b - x for x, b in zip(seq, seq[1:] + [f], strict=True)])
            assert diffs == Counter(vs)
        elif kind in ("max", "min"):
            key = (lambda x: x) if signed else u
            pick = max if kind == "max" else min
            assert key(f) == key(pick([i0] + vs, key=key))
            for old in os_:  # each old is init or someone's value
                assert old == i0 or old in vs
        elif kind == "xchg":
            assert Counter(os_ + [f]) == Counter([i0] + vs)
        else:
            acc = i0
            for x in vs:
                acc = {"and": acc & x, "or": acc | x, "xor": acc ^ x}[kind]
            assert f == acc


@triton.jit
def _cas(P, C, V, Out, n, NADDR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_cas(P + offs % NADDR, tl.load(C + offs, mask=m), tl.load(V + offs, mask=m))
    tl.store(Out + offs, old, mask=m)


def test_cas64_uncontended(mps_driver):
    n = 1000
    dev = _dev(mps_driver)
    init = torch.randint(-2**62, 2**62, (n,), dtype=torch.int64)
    cmp = torch.where(torch.rand(n) < 0.5, init, init ^ (1 << 40))  # half match (high half differs)
    val = torch.randint(-2**62, 2**62, (n,), dtype=torch.int64)
    p = init.clone().to(dev)
    o = torch.zeros(n, dtype=torch.int64, device=dev)
    _cas[(triton.cdiv(n, 128),)](p, cmp.to(dev), val.to(dev), o, n, NADDR=n, BLOCK=128)
    assert torch.equal(o.cpu(), init)
    assert torch.equal(p.cpu(), torch.where(cmp == init, val, init))


def test_cas64_one_winner(mps_driver):
    """Every lane of every program tries to swap 0 -> its own id on one address: one wins."""
    n = 1000
    dev = _dev(mps_driver)
    ids = torch.arange(1, n + 1, dtype=torch.int64) << 33  # ids differ in the high half only
    p = torch.zeros(1, dtype=torch.int64, device=dev)
    o = torch.full((n,), -1, dtype=torch.int64, device=dev)
    _cas[(triton.cdiv(n, 128),)](p, torch.zeros(n, dtype=torch.int64, device=dev), ids.to(dev), o, n,
                                 NADDR=1, BLOCK=128)
    olds = o.cpu()
    winner = int(p.cpu()[0])
    assert winner in ids.tolist()
    assert int((olds == 0).sum()) == 1
    assert ids[olds == 0].item() == winner
    assert torch.all((olds == 0) | (olds == winner))


def test_lock_table_binding_in_metadata(mps_driver):
    n = 10
    dev = _dev(mps_driver)
    k = _cas[(1,)](torch.zeros(n, dtype=torch.int64, device=dev), torch.zeros(n, dtype=torch.int64, device=dev),
                   torch.ones(n, dtype=torch.int64, device=dev), torch.zeros(n, dtype=torch.int64, device=dev), n,
                   NADDR=n, BLOCK=16)
    msl = k.asm["msl"].decode() if isinstance(k.asm["msl"], bytes) else k.asm["msl"]
    assert "tmps_locks" in msl and "lock-winner loop" in msl


@triton.jit(debug=True)
def _add_checked(P, V, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(V + offs, mask=m, other=0)
    tl.device_assert(v >= 0, "negative")
    tl.atomic_add(P + offs % 2, v, mask=m)


def test_lock_table_with_debug_buffer(mps_driver):
    """Both hidden buffers (debug records, then the lock table) bound together."""
    n = 300
    dev = _dev(mps_driver)
    v = torch.randint(0, 2**40, (n,), dtype=torch.int64)
    p = torch.zeros(2, dtype=torch.int64, device=dev)
    _add_checked[(triton.cdiv(n, 64),)](p, v.to(dev), n, BLOCK=64)
    assert p.cpu().tolist() == [int(v[0::2].sum()), int(v[1::2].sum())]


@triton.jit(noinline=True)
def _add64_in_callee(ptr, v):
    return tl.atomic_add(ptr, v)


@triton.jit
def _calls_add64(P, V, Out):
    pid = tl.program_id(0)
    tl.store(Out + pid, _add64_in_callee(P + pid % 2, tl.load(V + pid)))


def test_lock_table_reaches_noinline_callees(mps_driver):
    """A noinline callee (scalar arguments) with a 64-bit atomic gets the table from its caller."""
    dev = _dev(mps_driver)
    n = 37
    v = torch.randint(0, 2**40, (n,), dtype=torch.int64)
    p = torch.zeros(2, dtype=torch.int64, device=dev)
    o = torch.full((n,), -1, dtype=torch.int64, device=dev)
    _calls_add64[(n,)](p, v.to(dev), o)
    assert p.cpu().tolist() == [int(v[0::2].sum()), int(v[1::2].sum())]
    assert torch.all(o.cpu() >= 0)
