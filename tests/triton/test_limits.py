"""Metal limits, many arguments, tensor descriptors, device assert/print and precise math, end
to end through `kernel[grid](...)` (Triton's own compile, load and launch paths)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources
from wide_kernels import wide_kernel, wide_reference


def device(mps_driver):
    return mps_driver.get_active_torch_device()


# ---- threadgroup memory and threads: OutOfResources --------------------------------------------

@triton.jit
def transpose(x_ptr, y_ptr, n, B: tl.constexpr):
    # One program transposes a B x B tile: tl.trans goes through threadgroup memory (B*B*4 bytes).
    r = tl.arange(0, B)
    m = (r[:, None] < n) & (r[None, :] < n)
    x = tl.load(x_ptr + r[:, None] * n + r[None, :], mask=m, other=0.0)
    mt = (r[None, :] < n) & (r[:, None] < n)
    tl.store(y_ptr + r[:, None] * n + r[None, :], tl.trans(x), mask=mt)


def test_transpose_over_threadgroup_memory_runs_in_rounds(mps_driver, fresh_cache):
    # A 128 x 128 fp32 tile is 64 KiB: the layout conversion goes through 32 KiB in two rounds.
    dev = device(mps_driver)
    n = 100  # not a multiple of the block: masked rows and columns
    x = torch.randn(n, n, device=dev)
    y = torch.full_like(x, float("nan"))
    k = transpose[(1,)](x, y, n, B=128)
    assert k.metadata.shared <= 32768
    assert "in 2 rounds of" in k.asm["msl"]
    torch.testing.assert_close(y, x.T, rtol=0, atol=0)


# Threadgroup memory over 32 KiB through kernel[grid]: tests/errors/test_triton_inputs.py.


@triton.autotune(configs=[triton.Config({"BINS": 16384}, num_warps=4), triton.Config({"BINS": 4096}, num_warps=2)],
                 key=["n"])
@triton.jit
def histogram_tuned(x_ptr, h_ptr, n, BINS: tl.constexpr):
    offs = tl.arange(0, 64)
    h = tl.histogram(tl.load(x_ptr + offs, mask=offs < n, other=0), BINS, mask=offs < n)
    tl.store(h_ptr + tl.arange(0, BINS), h, mask=tl.arange(0, BINS) < 4096)


def test_autotune_prunes_the_config_over_the_limit(mps_driver, fresh_cache, rng):
    dev = device(mps_driver)
    n = 50
    x = torch.from_numpy(rng.integers(0, 4096, size=64).astype(np.int32)).to(dev)
    h = torch.full((4096,), -1, dtype=torch.int32, device=dev)
    histogram_tuned[(1,)](x, h, n)
    assert histogram_tuned.best_config.kwargs["BINS"] == 4096
    want = torch.bincount(x[:n].cpu().long(), minlength=4096).to(torch.int32)
    torch.testing.assert_close(h.cpu(), want, rtol=0, atol=0)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=64), triton.Config({"BLOCK": 256}, num_warps=4)],
                 key=["n"])
@triton.jit
def copy_tuned(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_too_many_warps_is_out_of_resources_and_pruned(mps_driver, fresh_cache):
    dev = device(mps_driver)
    n = 1000
    x = torch.randn(n, device=dev)
    y = torch.full((n,), float("nan"), device=dev)
    copy_tuned[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, n)
    assert copy_tuned.best_config.num_warps == 4
    torch.testing.assert_close(y, x, rtol=0, atol=0)
    with pytest.raises(OutOfResources, match="num_warps=64"):
        copy_tuned.fn[(4,)](x, y, n, BLOCK=256, num_warps=64)


# ---- 40 arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize("num_warps,debug", [(1, False), (4, False), (4, True)])
def test_forty_arguments(mps_driver, rng, num_warps, debug):
    dev = device(mps_driver)
    n_ptr, n_scalar = 8, 31  # + n: 40 arguments, 39 of them bound -> scalars packed
    fn = wide_kernel(n_ptr, n_scalar)
    n = 333
    xs = [torch.from_numpy(rng.integers(-8, 8, size=n).astype(np.float32)).to(dev) for _ in range(n_ptr - 1)]
    out = torch.full((n,), float("nan"), device=dev)
    values = []
    for k in range(n_scalar):  # i32, fp32 and i64 scalars (Triton's specialisation of Python values)
        kind = k % 3
        values.append(int(rng.integers(2, 999)) if kind == 0 else
                      float(rng.integers(-16, 16)) / 2 if kind == 1 else 2**40 + int(rng.integers(2, 999)))
    k = fn[(triton.cdiv(n, 128),)](*xs, out, *values, n, BLOCK=128, num_warps=num_warps, debug=debug)
    assert k.metadata.tmps_args["pack_scalars_at"] == n_ptr
    # debug=True adds Triton's overflow asserts: the debug buffer binds after the packed struct.
    assert (k.metadata.tmps_args["debug"] or {}).get("binding") == (n_ptr + 1 if debug else None)
    want = wide_reference([x.cpu().numpy() for x in xs], values).astype(np.float32)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_too_many_pointer_arguments_names_the_kernel(mps_driver):
    from triton_mps.compiler import CompilationError

    fn = wide_kernel(33, 0)
    dev = device(mps_driver)
    bufs = [torch.zeros(4, device=dev) for _ in range(33)]
    with pytest.raises(CompilationError, match="wide_33_0.*31"):
        fn[(1,)](*bufs, 4, BLOCK=32)


# ---- tensor descriptors (rewritten to pointers by Triton's pass) and block pointers -----------

@triton.jit
def desc_scale(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    yd.store([pm, pn], xd.load([pm, pn]) * 3.0)  # out-of-bounds rows/columns: zero-padded / not stored


@triton.jit
def desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    ad = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    bd = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    cd = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(ad.load([pm, k * BK]), bd.load([k * BK, pn]))
    cd.store([pm, pn], acc)


@pytest.fixture
def descriptor_allocator():
    # Triton asks for global scratch for in-kernel descriptors when a target keeps them as
    # TMA objects; after the rewrite to pointers none is needed, but set one as CUDA code does.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    yield
    triton.set_allocator(None)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_tensor_descriptor_copy(mps_driver, descriptor_allocator, num_warps):
    dev = device(mps_driver)
    M, N = 37, 45
    x = torch.randn(M, N, device=dev)
    y = torch.full((M, N), float("nan"), device=dev)
    desc_scale[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, y, M, N, BM=16, BN=16, num_warps=num_warps)
    torch.testing.assert_close(y, x * 3.0, rtol=0, atol=0)


def test_tensor_descriptor_matmul(mps_driver, descriptor_allocator):
    dev = device(mps_driver)
    M, N, K = 45, 37, 70
    a = torch.randn(M, K, device=dev)
    b = torch.randn(K, N, device=dev)
    c = torch.full((M, N), float("nan"), device=dev)
    desc_matmul[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, BM=16, BN=16, BK=16)
    want = (a.double() @ b.double()).float()
    torch.testing.assert_close(c, want, rtol=1e-5, atol=1e-4)


@triton.jit
def block_ptr_copy(x_ptr, y_ptr, n, B: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(B,), order=(0,))
    tl.store(y_ptr + tl.arange(0, B), tl.load(p, boundary_check=(0,)))


def test_block_pointers_are_gone_in_this_triton(mps_driver):
    """Triton 3.9 removed block pointers from the language (tensor descriptors replace them):
    the front end rejects tl.make_block_ptr before any backend pass runs."""
    dev = device(mps_driver)
    x = torch.zeros(8, device=dev)
    with pytest.raises(Exception, match="Block pointers have been removed"):
        block_ptr_copy[(1,)](x, x, 8, B=8)


# ---- device assert and print ------------------------------------------------------------------

@triton.jit
def checked_div(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    tl.device_assert(y != 0, "division by zero")
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) / y, mask=mask)


def test_device_assert(mps_driver):
    dev = device(mps_driver)
    n = 500
    x = torch.randn(n, device=dev)
    y = torch.rand(n, device=dev) + 0.5
    want = x / y
    checked_div[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128, debug=True)
    torch.testing.assert_close(x, want)

    y[300] = 0.0
    with pytest.raises(AssertionError) as e:
        checked_div[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128, debug=True)
    msg = str(e.value)
    assert "checked_div" in msg and "division by zero" in msg and "program (2, 0, 0), element (44)" in msg
    assert f"test_limits.py:{e.value.line}" in msg
    # Without debug=True Triton drops device asserts: no check, no debug buffer.
    k = checked_div[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
    assert k.metadata.tmps_args["debug"] is None


@triton.jit
def show(x_ptr, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("v", v)
    tl.device_print("pid", tl.program_id(0))


def test_device_print(mps_driver, capsys):
    dev = device(mps_driver)
    x = torch.arange(4, dtype=torch.int32, device=dev) * 10 - 5
    show[(2,)](x, BLOCK=4)
    out = capsys.readouterr().out.splitlines()
    want = []
    for pid in range(2):
        want += [f"pid ({pid}, 0, 0) idx ({j}) v: {j * 10 - 5}" for j in range(4)]
        want += [f"pid ({pid}, 0, 0) idx () pid: {pid}"] * 128  # a scalar prints once per thread (4 warps)
    assert out == want


@triton.jit
def chatty_check(x_ptr, rounds, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    for _ in range(rounds):  # more print records than the launch's capacity (8,192)
        tl.device_print("x", x)
    tl.device_assert(x > 0, "x must be positive")


def test_prints_never_drop_a_failed_assert(mps_driver, capfd):
    """Asserts have their own region of the record buffer: prints that overflow theirs cannot
    push a failed assert out, and the failing-element count stays exact (compiler/abi.py)."""
    x = torch.ones(256, device=device(mps_driver))
    x[[3, 130, 200]] = -1.0
    with pytest.raises(AssertionError) as e:
        chatty_check[(2,)](x, 40, BLOCK=128, debug=True)  # 40 x 256 = 10,240 print records
    assert e.value.failures == 3 and "3 failing elements" in str(e.value)
    assert "x must be positive" in str(e.value) and "program (0, 0, 0), element (3)" in str(e.value)
    out, err = capfd.readouterr()
    assert len(out.splitlines()) == 8192 and "2048 device print records dropped" in err


# ---- precise math ---------------------------------------------------------------------------------

@triton.jit
def precise(a_ptr, b_ptr, s_ptr, d_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1.0)
    b = tl.load(b_ptr + offs, mask=m, other=1.0)
    tl.store(s_ptr + offs, tl.sqrt_rn(a), mask=m)
    tl.store(d_ptr + offs, tl.div_rn(a, b), mask=m)


def test_precise_sqrt_div(mps_driver, rng):
    dev = device(mps_driver)
    n = 3000
    a = np.abs(rng.standard_normal(n).astype(np.float32) * np.float32(2.0) ** rng.integers(-60, 60, n))
    b = (rng.standard_normal(n).astype(np.float32) * np.float32(2.0) ** rng.integers(-60, 60, n))
    a, b = a.astype(np.float32), b.astype(np.float32)
    s = torch.full((n,), float("nan"), device=dev)
    d = torch.full((n,), float("nan"), device=dev)
    precise[(triton.cdiv(n, 512),)](torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev), s, d, n, BLOCK=512)
    np.testing.assert_array_equal(s.cpu().numpy().view(np.uint32), np.sqrt(a).view(np.uint32))
    np.testing.assert_array_equal(d.cpu().numpy().view(np.uint32), np.divide(a, b).view(np.uint32))
