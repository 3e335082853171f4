"""Row-wise softmax of a 2-D tensor in one pass over memory (fused: load, max, exp, sum, divide, store).

Two schedules of the same math:
- `softmax_rows_kernel`: each program takes a tile of ROWS consecutive rows, the whole row width
  in one BLOCK_N-wide block (BLOCK_N >= n_cols), so the row max and sum are in-register
  reductions along axis 1.
- `softmax_persistent_kernel`: a fixed number of programs; each walks the rows
  program_id, program_id + num_programs, ... one row per iteration (the schedule for many rows).
Math is in fp32 whatever the input dtype; the output has the input's dtype. Padding columns load
as -inf so they add exp(-inf) = 0 to the sum.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = (torch.float32, torch.float16)


@triton.jit
def _normalize(x, AXIS: tl.constexpr):
    # x: fp32 tile whose axis AXIS is the row; padding is -inf.
    shifted = x - tl.max(x, axis=AXIS, keep_dims=True)  # the largest term becomes exp(0) = 1
    e = tl.exp(shifted)
    return e / tl.sum(e, axis=AXIS, keep_dims=True)


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                        ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    rows64 = rows.to(tl.int64)[:, None]
    x = tl.load(x_ptr + rows64 * x_row_stride + cols[None, :], mask=inside, other=-float("inf"))
    y = _normalize(x.to(tl.float32), 1)
    tl.store(y_ptr + rows64 * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=inside)


@triton.jit
def softmax_persistent_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    inside = cols < n_cols
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row.to(tl.int64) * x_row_stride + cols, mask=inside, other=-float("inf"))
        y = _normalize(x.to(tl.float32), 0)
        tl.store(y_ptr + row.to(tl.int64) * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def softmax(x: torch.Tensor, out: torch.Tensor | None = None, *, rows_per_program: int = 1,
            programs: int | None = None, num_warps: int = 4) -> torch.Tensor:
    """softmax(x, dim=-1) of a 2-D tensor with unit column stride.

    `programs` set: the persistent schedule with that many programs; else `rows_per_program`
    rows per program (a power of two)."""
    if x.ndim != 2 or x.stride(1) != 1 or x.dtype not in DTYPES:
        raise ValueError(f"softmax: expected a 2-D {DTYPES} tensor with unit column stride, got "
                         f"{x.dtype} {tuple(x.shape)} strides {x.stride()}")
    n_rows, n_cols = x.shape
    if out is None:
        out = torch.empty_like(x)
    if n_rows == 0 or n_cols == 0:
        return out
    block_n = triton.next_power_of_2(n_cols)
    if programs is not None:
        softmax_persistent_kernel[(min(programs, n_rows),)](
            x, out, n_rows, n_cols, x.stride(0), out.stride(0), BLOCK_N=block_n, num_warps=num_warps)
    else:
        softmax_rows_kernel[(triton.cdiv(n_rows, rows_per_program),)](
            x, out, n_rows, n_cols, x.stride(0), out.stride(0), ROWS=rows_per_program, BLOCK_N=block_n,
            num_warps=num_warps)
    return out


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension in float64."""
    return torch.softmax(x.double(), dim=-1)
