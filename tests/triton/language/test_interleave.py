"""Triton atomics under the simulator's random interleaving (TRITON_MPS_SIM_INTERLEAVE) and
race check (TRITON_MPS_RACECHECK): the 64-bit lock table and the compare-and-swap loops our
compiler emits stay exact when threads switch at every access, while a histogram written with
plain load + store (a user bug) loses updates in the same mode."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from tmps_testing import rmw_kernel


@triton.jit
def threads_histogram(bins_ptr, x_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr, ATOMIC: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    b = tl.load(x_ptr + offs, mask=mask, other=0) % NB
    if ATOMIC:
        tl.atomic_add(bins_ptr + b, 1, mask=mask)
    else:  # a plain read-modify-write (the bug under test): threads race on the bins
        tl.store(bins_ptr + b, tl.load(bins_ptr + b, mask=mask) + 1, mask=mask)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_lock_table_exact_under_interleaving(mps_driver, monkeypatch, seed):
    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", seed)
    monkeypatch.setenv("TRITON_MPS_RACECHECK", "1")
    dev = mps_driver.get_active_torch_device()
    n, nb = 300, 3
    v = torch.randint(1, 2**40, (n,), dtype=torch.int64)
    init = torch.randint(0, 2**40, (nb,), dtype=torch.int64)
    ptr = init.clone().to(dev)
    old = torch.full((n,), -7, dtype=torch.int64, device=dev)
    rmw_kernel[(triton.cdiv(n, 128),)](ptr, v.to(dev), old, n, KIND="add", NB=nb, BLOCK=128)
    expect = init.clone()
    for a in range(nb):
        expect[a] += v[a::nb].sum()
    assert torch.equal(ptr.cpu(), expect)
    # Every returned old value is a prefix sum of some serial order of one address's adds.
    for a in range(nb):
        olds = sorted(old.cpu()[a::nb].tolist())
        assert olds[0] == init[a] and len(set(olds)) == len(olds)


def test_interleaving_exposes_a_non_atomic_histogram(mps_driver, monkeypatch):
    dev = mps_driver.get_active_torch_device()
    n, nb = 256, 4
    x = torch.randint(0, 1000, (n,), dtype=torch.int32)
    expect = torch.bincount(x % nb, minlength=nb).to(torch.int32)

    def run(atomic: bool) -> torch.Tensor:
        bins = torch.zeros(nb, dtype=torch.int32, device=dev)
        threads_histogram[(1,)](bins, x.to(dev), n, NB=nb, BLOCK=n, ATOMIC=atomic, num_warps=4)
        return bins.cpu()

    monkeypatch.setenv("TRITON_MPS_SIM_INTERLEAVE", "3")
    assert torch.equal(run(True), expect)
    lost = run(False)
    assert lost.sum() < n, (lost, expect)  # updates lost: the bug shows
