"""Fenced kernels' MSL never drops `coherent(device)` implicitly (docs/msl-versions.md).

Whether Metal converts a `coherent(device) device T*` to a plain `device T*` implicitly is not
known (no Mac here). If it treats the qualifier like `volatile`, such a conversion would make
every atomic kernel fail to compile on macOS 15+. The simulator's strict check reads the
qualifier as `volatile` at MSL 3.2, so clang rejects an implicit drop where a strict Metal would;
these tests compile fenced kernels through it at 3.2 whatever the active device's version."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton_mps

_DROP = """#include <metal_stdlib>
using namespace metal;
void put(device float* q) { *q = 1.0f; }
kernel void k(coherent(device) device float* p [[buffer(0)]]) { put(%s); }
"""


def test_strict_check_rejects_an_implicit_coherent_drop():
    sim = triton_mps.get_device("sim")
    with pytest.raises(triton_mps.CompileError, match="volatile"):
        triton_mps.compile_msl(_DROP % "p", "k", sim, language_version="3.2")
    # An explicit cast may drop it (MSL's atomic casts do), and the real build is unaffected.
    triton_mps.compile_msl(_DROP % "(device float*)p", "k", sim, language_version="3.2")
    triton_mps.compile_msl(_DROP % "p", "k", sim, language_version="3.2", strict=False)
    # What Metal certainly allows stays allowed: both spellings, vector and scalar loads and
    # stores, pointer arithmetic, atomics through an explicit cast, coherent-to-coherent calls.
    ok = """#include <metal_stdlib>
using namespace metal;
void put(coherent(device) device float* q) { q[1] = q[0]; }
kernel void k(coherent(device) device float* p [[buffer(0)]], device coherent(device) float4* v [[buffer(1)]],
              coherent(device) device int* c [[buffer(2)]]) {
  v[1] = v[0] * 2.0f;
  put(p + 2);
  atomic_fetch_add_explicit((device atomic_int*)c, 1, memory_order_relaxed);
}
"""
    triton_mps.compile_msl(ok, "k", sim, language_version="3.2")


@triton.jit
def _add_f32(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(p + offs % 3, 1.0, mask=offs < n)  # acq_rel: fenced


@triton.jit
def _max_i64(p, v):
    tl.atomic_max(p, tl.load(v), sem="relaxed")  # 64-bit: lock helper, fenced


@triton.jit
def _add_half(p):
    tl.atomic_add(p + 1, tl.full((), 2.0, tl.float16))  # 16-bit CAS loop on the containing word


@triton.jit
def _cas_i32(p):
    tl.atomic_cas(p, 0, 5)


@triton.jit
def _poll_i32(flag, out):
    tl.atomic_poll(flag, 5, sem="acquire")
    tl.store(out, 7)


def _run(name: str, dev: str):
    if name == "add_f32":
        x = torch.zeros(3, device=dev)
        return _add_f32[(1,)](x, 8, BLOCK=8), x, torch.tensor([3.0, 3.0, 2.0])
    if name == "max_i64":
        x = torch.zeros(1, dtype=torch.int64, device=dev)
        v = torch.tensor([2**40], dtype=torch.int64, device=dev)
        return _max_i64[(2,)](x, v), x, v.cpu()
    if name == "add_half":
        x = torch.zeros(2, dtype=torch.float16, device=dev)
        return _add_half[(1,)](x), x, torch.tensor([0.0, 2.0], dtype=torch.float16)
    if name == "cas_i32":
        x = torch.zeros(1, dtype=torch.int32, device=dev)
        return _cas_i32[(1,)](x), x, torch.tensor([5], dtype=torch.int32)
    flag = torch.tensor([5], dtype=torch.int32, device=dev)
    out = torch.zeros(1, dtype=torch.int32, device=dev)
    return _poll_i32[(1,)](flag, out), out, torch.tensor([7], dtype=torch.int32)


@pytest.mark.parametrize("name", ["add_f32", "max_i64", "add_half", "cas_i32", "poll_i32"])
def test_fenced_atomic_kernels_pass_the_strict_check_at_3_2(mps_driver, name):
    k, got, want = _run(name, mps_driver.get_active_torch_device())
    assert torch.equal(got.cpu(), want)
    msl = k.asm["msl"]
    assert "TMPS_DEVICE_FENCE();" in msl and "TMPS_COHERENT device" in msl
    triton_mps.compile_msl(msl, k.name, triton_mps.get_device("sim"), language_version="3.2")
