"""Layer normalization over the last dimension: forward and backward.

Forward: when a row fits one block (up to 8192 columns), a program reads w and b once and then
each of its ROWS rows once: mean, centred variance and y = (x - mean) * rstd * w + b from
registers. Longer rows: one program per row walks it in BLOCK_N chunks twice (mean, then
variance), then a third time to write y. mean and rstd are saved for backward.

Backward, in two kernels:
  1. `_ln_backward_dx` (one program per row) computes dx from the saved statistics, and the row's
     contributions to dw (dy * xhat) and db (dy). Rows are dealt round-robin to GROUPS partial
     buffers; a program adds its contribution into its group's buffer while holding that group's
     lock (a spin lock: atomic_cas 0 -> 1 to take it, atomic_xchg back to 0 to give it up).
     Many rows share a buffer, so the partial buffers stay small and contention stays low.
  2. `_ln_backward_dwdb` sums the GROUPS partial rows per column into dw and db.

Memory ordering: the lock's atomics carry Triton's default `acq_rel` semantics. The compiler
must make the buffer writes of every thread of the program visible before the release and the
acquire must happen before any thread reads the buffer (see tests/triton/kernels/test_layer_norm.py).
All statistics and partial sums are fp32, whatever the input dtype.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _ln_forward(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride, n_rows, n_cols, eps,
                BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ONE_PASS: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    if ONE_PASS:
        # The row fits one block: x is read once, and w and b once per program for its ROWS rows.
        m = cols < n_cols
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
        for i in range(ROWS):
            row = tl.program_id(0) * ROWS + i
            if row < n_rows:
                x = tl.load(x_ptr + row.to(tl.int64) * x_row_stride + cols, mask=m, other=0.0).to(tl.float32)
                mean = tl.sum(x, axis=0) / n_cols
                d = tl.where(m, x - mean, 0.0)  # centred first: no E[x^2] - mean^2 cancellation
                rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
                tl.store(mean_ptr + row, mean)
                tl.store(rstd_ptr + row, rstd)
                tl.store(y_ptr + row.to(tl.int64) * y_row_stride + cols, d * rstd * w + b, mask=m)
    else:
        row = tl.program_id(0)
        x_row = x_ptr + row.to(tl.int64) * x_row_stride
        y_row = y_ptr + row.to(tl.int64) * y_row_stride
        total = tl.zeros([BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            total += tl.load(x_row + c, mask=c < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(total, axis=0) / n_cols

        # Second pass over the data (not E[x^2] - mean^2, which cancels badly for large means).
        sq = tl.zeros([BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            d = tl.load(x_row + c, mask=c < n_cols, other=0.0).to(tl.float32) - mean
            sq += tl.where(c < n_cols, d * d, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)

        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            m = c < n_cols
            x = tl.load(x_row + c, mask=m, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=m).to(tl.float32)
            b = tl.load(b_ptr + c, mask=m).to(tl.float32)
            tl.store(y_row + c, (x - mean) * rstd * w + b, mask=m)


def forward_launch(n_rows: int, n_cols: int, block_n: int | None = None) -> tuple[tuple[int], dict]:
    """Grid and constexprs of `_ln_forward`: one pass with the row in one block when it fits
    (up to 8192 columns), ROWS rows per program so w and b are read once per program while
    keeping at least 128 programs (parallelism); else one program per row, three passes."""
    block_n = block_n or triton.next_power_of_2(max(n_cols, 1))
    if block_n >= n_cols and block_n <= 8192:
        rows = max(1, min(16, n_rows // 128))
        return (triton.cdiv(n_rows, rows),), {"BLOCK_N": block_n, "ROWS": rows, "ONE_PASS": True}
    return (n_rows,), {"BLOCK_N": min(block_n, 1024), "ROWS": 1, "ONE_PASS": False}


@triton.jit
def _ln_backward_dx(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr, locks_ptr,
                    row_stride, n_cols, GROUPS: tl.constexpr, BLOCK_N: tl.constexpr):
    # The whole row is one block (BLOCK_N >= n_cols): the two row sums below need all of it.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = cols < n_cols
    off = row.to(tl.int64) * row_stride + cols
    x = tl.load(x_ptr + off, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + off, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)

    xhat = tl.where(m, (x - mean) * rstd, 0.0)
    g = w * dy  # gradient with respect to xhat
    # d/dx of (x - mean) * rstd, applied to g: rstd * (g - mean(g) - xhat * mean(g * xhat)).
    mean_g = tl.sum(g, axis=0) / n_cols
    mean_gx = tl.sum(g * xhat, axis=0) / n_cols
    dx = (g - mean_g - xhat * mean_gx) * rstd
    tl.store(dx_ptr + off, dx, mask=m)

    # This row's share of dw and db goes into partial row `group` under that group's lock.
    group = row % GROUPS
    lock = locks_ptr + group
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    part = group * n_cols + cols
    dw_sum = tl.load(dw_part_ptr + part, mask=m, other=0.0) + dy * xhat
    db_sum = tl.load(db_part_ptr + part, mask=m, other=0.0) + dy
    tl.store(dw_part_ptr + part, dw_sum, mask=m)
    tl.store(db_part_ptr + part, db_sum, mask=m)
    tl.atomic_xchg(lock, 0)


@triton.jit
def _ln_backward_dwdb(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols,
                      BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    groups = tl.arange(0, BLOCK_G)
    dw = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, n_groups, BLOCK_G):
        g = g0 + groups
        m = (g[:, None] < n_groups) & (cols[None, :] < n_cols)
        off = g[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + off, mask=m, other=0.0)
        db += tl.load(db_part_ptr + off, mask=m, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < n_cols)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < n_cols)


def _rows(x: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    return x2 if x2.stride(-1) == 1 else x2.contiguous()


def layer_norm_forward(x, weight, bias, eps=1e-5, *, block_n=None, num_warps=4, out=None, mean=None, rstd=None):
    """y, mean, rstd of layer norm over the last dim of x (any leading shape; fp32/fp16/bf16)."""
    x2 = _rows(x)
    n_rows, n_cols = x2.shape
    y = torch.empty_like(x2) if out is None else out.reshape(n_rows, n_cols)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device) if mean is None else mean
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device) if rstd is None else rstd
    if n_rows:
        grid, meta = forward_launch(n_rows, n_cols, block_n)
        _ln_forward[grid](x2, y, weight, bias, mean, rstd, x2.stride(0), y.stride(0), n_rows, n_cols, eps,
                          num_warps=num_warps, **meta)
    return y.reshape(x.shape), mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd, *, groups=None, num_warps=4, dx=None, dw=None, db=None):
    """dx, dw, db of layer norm given dy and the forward's saved mean and rstd.

    `groups` is the number of partial dw/db rows (and locks); more groups, less lock contention.
    The row must fit one block (n_cols <= 8192 here).
    """
    x2, dy2 = _rows(x), _rows(dy)
    n_rows, n_cols = x2.shape
    assert dy2.shape == x2.shape and dy2.stride() == x2.stride(), "dy and x must have the same row layout"
    block_n = triton.next_power_of_2(n_cols)
    if block_n > 8192:
        raise ValueError(f"layer_norm_backward: rows of {n_cols} elements do not fit one block")
    groups = groups or max(1, min(64, n_rows // 4))
    dev = x.device
    dx = torch.empty_like(x2) if dx is None else dx.reshape(n_rows, n_cols)
    dw = torch.empty(n_cols, dtype=weight.dtype, device=dev) if dw is None else dw
    db = torch.empty(n_cols, dtype=weight.dtype, device=dev) if db is None else db
    dw_part = torch.zeros(groups, n_cols, dtype=torch.float32, device=dev)
    db_part = torch.zeros(groups, n_cols, dtype=torch.float32, device=dev)
    locks = torch.zeros(groups, dtype=torch.int32, device=dev)
    if n_rows:
        _ln_backward_dx[(n_rows,)](dy2, x2, weight, mean, rstd, dx, dw_part, db_part, locks, x2.stride(0), n_cols,
                                   GROUPS=groups, BLOCK_N=block_n, num_warps=num_warps)
    block_cols = 32
    _ln_backward_dwdb[(triton.cdiv(n_cols, block_cols),)](dw_part, db_part, dw, db, groups, n_cols,
                                                         BLOCK_G=16, BLOCK_N=block_cols, num_warps=num_warps)
    return dx.reshape(x.shape), dw, db


def layer_norm_reference(x, weight, bias, eps=1e-5):
    """y, mean, rstd in float64 (torch)."""
    x64 = x.double()
    mean = x64.mean(-1)
    rstd = 1.0 / torch.sqrt(x64.var(-1, unbiased=False) + eps)
    y = (x64 - mean[..., None]) * rstd[..., None] * weight.double() + bias.double()
    return y, mean, rstd


def layer_norm_backward_reference(dy, x, weight, bias, eps=1e-5):
    """dx, dw, db in float64 by autograd through torch's own layer norm."""
    x64 = x.double().detach().requires_grad_(True)
    w64 = weight.double().detach().requires_grad_(True)
    b64 = bias.double().detach().requires_grad_(True)
    y = torch.nn.functional.layer_norm(x64, (x.shape[-1],), w64, b64, eps)
    y.backward(dy.double())
    return x64.grad, w64.grad, b64.grad
