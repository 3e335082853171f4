"""Arrays other than torch tensors as kernel pointer arguments (triton_mps/binding.py, backend/jit_hooks.py): numpy,
MLX, buffer-protocol and DLPack objects; zero-copy, strides, read-only arrays."""

from __future__ import annotations

import array

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def copy2d_kernel(src_ptr, dst_ptr, rows, cols, s_row, s_col, d_row, d_col, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    v = tl.load(src_ptr + r * s_row + c * s_col, mask=c < cols)
    tl.store(dst_ptr + r * d_row + c * d_col, v, mask=c < cols)


def axpy(x, y, out, a: float, n: int) -> None:
    axpy_kernel[(triton.cdiv(n, 128),)](x, y, out, a, n, BLOCK=128)


def test_numpy_arrays_are_bound_in_place(rng):
    n = 1000  # not a multiple of the block
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    axpy(x, y, out, 2.5, n)
    np.testing.assert_allclose(out, 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    # Mixed with torch tensors in one launch, and a torch tensor sharing the numpy memory.
    out_t = torch.from_numpy(out)
    axpy(torch.from_numpy(x), y, out_t, -1.0, n)
    np.testing.assert_allclose(out, y - x, rtol=1e-6, atol=1e-6)


def test_a_buffer_is_refused_by_name_and_its_typed_view_is_bound(rng):
    """A triton_mps.Buffer has no element type (Triton's pointer types need one): InvalidArgument
    naming the argument, not Triton's "failed to specialize"; a typed view of it works in place."""
    n = 256
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    buf = triton_mps.get_device().buffer(n * 4)
    with pytest.raises(triton_mps.InvalidArgument, match="argument 'out_ptr' is a triton_mps.Buffer"):
        axpy(x, y, buf, 2.0, n)
    out = buf.bytes_view().view(np.float32)
    axpy(x, y, out, 2.0, n)
    np.testing.assert_allclose(out, 2.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def test_strided_views_are_respected(rng):
    base = rng.standard_normal((13, 40)).astype(np.float32)
    src = base[::2, 3:30]  # a view: row stride 80 elements, offset 3
    dst = np.full((30, 7), np.nan, np.float32).T  # a transposed (column-major) destination
    rows, cols = src.shape[0], 7
    isz = src.itemsize
    copy2d_kernel[(rows,)](src, dst, rows, cols, src.strides[0] // isz, src.strides[1] // isz,
                           dst.strides[0] // isz, dst.strides[1] // isz, BLOCK=8)
    np.testing.assert_array_equal(dst[:rows, :cols], src[:, :cols])
    assert np.isnan(dst[rows:]).all(), "nothing written past the rows asked for"


def test_read_only_arrays_are_inputs_only(rng):
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x.flags.writeable = False
    out = np.full(n, np.nan, np.float32)
    axpy(x, y, out, 1.0, n)  # read-only input: fine
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    frozen = np.frombuffer(bytes(4 * n), np.float32)  # read-only memory
    with pytest.raises(triton_mps.InvalidArgument, match="argument 'out_ptr' is a read-only ndarray, but the kernel "
                                                         "stores through it"):
        axpy(x, y, frozen, 1.0, n)
    assert not frozen.any()
    axpy(x, y, out, 3.0, n)  # the process and the device stay usable
    np.testing.assert_allclose(out, 3 * x.astype(np.float64) + y, rtol=1e-5, atol=1e-6)


class DLPackOnly:
    """Exports only DLPack (like arrays of many libraries)."""

    def __init__(self, arr: np.ndarray):
        self._arr = arr

    def __dlpack__(self, **kwargs):
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


def test_buffer_protocol_and_dlpack_objects(rng):
    n = 200
    xs = rng.standard_normal(n).astype(np.float32)
    x = array.array("f", xs.tobytes())  # the buffer protocol only: no dtype, no data_ptr
    y_np = rng.standard_normal(n).astype(np.float32)
    y = DLPackOnly(y_np)
    out_np = np.full(n, np.nan, np.float32)
    out = DLPackOnly(out_np)  # written through DLPack: visible in the producer's memory
    axpy(x, y, out, 0.5, n)
    np.testing.assert_allclose(out_np, 0.5 * xs.astype(np.float64) + y_np, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="failed to specialize argument of type: object"):
        axpy(object(), y, out, 1.0, n)  # not an array at all: Triton's own error


def test_mlx_arrays(rng):
    mx = pytest.importorskip("mlx.core")
    n = 500
    xs, ys = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x = mx.array(xs) * 1.0  # lazy until bound: the launcher evaluates it
    y = mx.array(ys)
    out = mx.zeros((n,), dtype=mx.float32) + 1.0
    axpy(x, y, out, 2.0, n)
    np.testing.assert_allclose(np.array(out), 2.0 * xs.astype(np.float64) + ys, rtol=1e-6, atol=1e-6)


def test_compiler_reports_the_pointers_a_kernel_writes():
    src = ASTSource(axpy_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32", "n": "i32",
                                  "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    k = triton.compile(src, target=GPUTarget("mps", 9, 32))
    assert k.metadata.tmps_args["written"] == ["out_ptr"]


@triton.jit
def loop_and_branch_kernel(a_ptr, b_ptr, c_ptr, d_ptr, n, flag):
    p = b_ptr
    for i in range(n):  # a loop-carried pointer
        tl.store(p, tl.load(a_ptr + i))
        p += 1
    if flag > 0:  # a pointer chosen at run time
        q = c_ptr
    else:
        q = d_ptr
    tl.atomic_add(q, 1.0)


def test_written_pointers_through_loops_and_branches():
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "d_ptr": "*fp32", "n": "i32", "flag": "i32"}
    k = triton.compile(ASTSource(loop_and_branch_kernel, sig), target=GPUTarget("mps", 9, 32))
    assert k.metadata.tmps_args["written"] == ["b_ptr", "c_ptr", "d_ptr"]
