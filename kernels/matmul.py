"""C = A @ B for 2-D tensors with any strides: fp32, fp16, bf16 (fp32 accumulation, output in the
input dtype) and int8 (int32 accumulation and output).

Each program computes one BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps with the
accumulator held in registers. Edges in M, N and K are masked (masked A/B elements load as 0,
which adds nothing).

Tile order: program ids are not mapped row-major onto the tile grid. Programs are dealt out in
bands of GROUP_M tile-rows; inside a band the ids run down a tile-column before moving right, so
programs that run at the same time reuse the same few B tile-columns and A tile-rows (better cache
reuse on a real GPU; the result does not depend on it).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8)

# Fixed configurations per input dtype (no autotuning): (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps).
CONFIGS = {
    torch.float32: (32, 32, 16, 4, 4),
    torch.float16: (32, 32, 32, 4, 4),
    torch.bfloat16: (32, 32, 32, 4, 4),
    torch.int8: (32, 32, 32, 4, 4),
}


@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program `pid` in the grouped order described above."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band_size = GROUP_M * tiles_n          # programs per band of GROUP_M tile-rows
    band = pid // band_size
    band_first_row = band * GROUP_M
    band_rows = tl.minimum(tiles_m - band_first_row, GROUP_M)  # the last band may be shorter
    within = pid - band * band_size
    return band_first_row + within % band_rows, within // band_rows


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  a_sm, a_sk, b_sk, b_sn, c_sm, c_sn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, INT_ACC: tl.constexpr):
    tile_m, tile_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # 64-bit element offsets: large matrices overflow int32 offsets.
    a_tile = a_ptr + rm.to(tl.int64)[:, None] * a_sm + rk[None, :] * a_sk
    b_tile = b_ptr + rk[:, None] * b_sk + rn.to(tl.int64)[None, :] * b_sn
    row_ok = rm[:, None] < M
    col_ok = rn[None, :] < N

    if INT_ACC:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=row_ok & (rk[None, :] < k_left), other=0)
        b = tl.load(b_tile, mask=(rk[:, None] < k_left) & col_ok, other=0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_tile += BLOCK_K * a_sk
        b_tile += BLOCK_K * b_sk

    c_tile = c_ptr + rm.to(tl.int64)[:, None] * c_sm + rn.to(tl.int64)[None, :] * c_sn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=row_ok & col_ok)


def out_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.int32 if dtype == torch.int8 else dtype


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, config=None) -> torch.Tensor:
    """a @ b. `config` = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps), default CONFIGS[dtype]."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} @ {tuple(b.shape)} do not chain")
    if a.dtype != b.dtype or a.dtype not in DTYPES:
        raise ValueError(f"matmul: dtypes {a.dtype}, {b.dtype}: expected one of {DTYPES}, both the same")
    (M, K), N = a.shape, b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype(a.dtype), device=a.device)
    if out.shape != (M, N) or out.dtype != out_dtype(a.dtype):
        raise ValueError(f"matmul: out must be {(M, N)} {out_dtype(a.dtype)}, got {tuple(out.shape)} {out.dtype}")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    bm, bn, bk, group_m, num_warps = config or CONFIGS[a.dtype]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m,
                        INT_ACC=a.dtype == torch.int8, num_warps=num_warps)
    return out


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """float64 product for float inputs; exact int64 product for int8 (an int32 kernel result
    equals it while no sum leaves int32's range)."""
    if a.dtype == torch.int8:
        return a.long() @ b.long()
    return a.double() @ b.double()
