"""Regressions found while writing kernels/vector_add.py, softmax.py, matmul.py, dropout.py and
strided.py."""

import triton
import triton.language as tl
from ttgir_harness import compile_kernel


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def test_supported_pointer_types_still_compile():
    # *fp64 was a bare TypeError naming neither kernel nor argument; float64 is emulated now.
    for t in ("*fp32", "*fp16", "*bf16", "*i8", "*u8", "*i64", "*i1", "*fp64"):
        compile_kernel(copy_kernel, {"src_ptr": t, "dst_ptr": t, "n": "i32"}, {"BLOCK": 32}, 1)
