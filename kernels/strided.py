"""2-D copies through arbitrary strides: the kernels take element strides, never assume a layout,
so they work on any torch view (slices with steps, transposes, expanded dims with stride 0).

- `copy2d_kernel`: dst[i, j] = src[i, j], both sides strided; one BLOCK_M x BLOCK_N tile per program.
- `transpose_kernel`: dst[j, i] = src[i, j]. A tile is read along src's rows, turned with tl.trans,
  and written along dst's rows, so both the loads and the stores walk the unit-stride direction
  when src and dst are row-major (the layout change happens on chip).
Offsets are 64-bit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.int64)


@triton.jit
def copy2d_kernel(src_ptr, dst_ptr, M, N, src_sm, src_sn, dst_sm, dst_sn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    i = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)[:, None]
    j = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)[None, :]
    inside = (i < M) & (j < N)
    v = tl.load(src_ptr + i * src_sm + j * src_sn, mask=inside)
    tl.store(dst_ptr + i * dst_sm + j * dst_sn, v, mask=inside)


@triton.jit
def transpose_kernel(src_ptr, dst_ptr, M, N, src_sm, src_sn, dst_sn, dst_sm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # src is M x N; dst is N x M with dst[j, i] at dst_ptr + j * dst_sn + i * dst_sm.
    i = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    j = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tile = tl.load(src_ptr + i[:, None] * src_sm + j[None, :] * src_sn,
                   mask=(i[:, None] < M) & (j[None, :] < N))
    turned = tl.trans(tile)  # BLOCK_N x BLOCK_M
    tl.store(dst_ptr + j[:, None] * dst_sn + i[None, :] * dst_sm, turned,
             mask=(j[:, None] < N) & (i[None, :] < M))


def _check(src: torch.Tensor, dst: torch.Tensor, dst_shape):
    if src.ndim != 2 or tuple(dst.shape) != tuple(dst_shape) or src.dtype != dst.dtype:
        raise ValueError(f"strided: src {src.dtype} {tuple(src.shape)} and dst {dst.dtype} {tuple(dst.shape)} "
                         f"do not match (dst must be {tuple(dst_shape)})")
    if src.dtype not in DTYPES:
        raise ValueError(f"strided: dtype {src.dtype} not in {DTYPES}")


def copy2d(src: torch.Tensor, dst: torch.Tensor, *, block=(32, 32), num_warps: int = 4) -> torch.Tensor:
    """dst[...] = src for two 2-D views of one shape and dtype, whatever their strides."""
    _check(src, dst, src.shape)
    M, N = src.shape
    if M and N:
        grid = (triton.cdiv(M, block[0]), triton.cdiv(N, block[1]))
        copy2d_kernel[grid](src, dst, M, N, src.stride(0), src.stride(1), dst.stride(0), dst.stride(1),
                            BLOCK_M=block[0], BLOCK_N=block[1], num_warps=num_warps)
    return dst


def transpose(src: torch.Tensor, dst: torch.Tensor | None = None, *, block=(32, 32),
              num_warps: int = 4) -> torch.Tensor:
    """dst = src.T materialized (row-major when dst is not given)."""
    M, N = src.shape if src.ndim == 2 else (None, None)
    if dst is None and src.ndim == 2:
        dst = torch.empty((N, M), dtype=src.dtype, device=src.device)
    _check(src, dst, (N, M))
    if M and N:
        grid = (triton.cdiv(M, block[0]), triton.cdiv(N, block[1]))
        transpose_kernel[grid](src, dst, M, N, src.stride(0), src.stride(1), dst.stride(0), dst.stride(1),
                               BLOCK_M=block[0], BLOCK_N=block[1], num_warps=num_warps)
    return dst


def copy2d_reference(src: torch.Tensor) -> torch.Tensor:
    return src.clone()


def transpose_reference(src: torch.Tensor) -> torch.Tensor:
    return src.t().contiguous()
