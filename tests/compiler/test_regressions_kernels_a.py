"""Regressions found while writing kernels/vector_add.py, softmax.py, matmul.py, dropout.py and
strided.py."""

import pytest
import triton
import triton.language as tl
from triton_mps.compiler import CompilationError
from ttgir_harness import compile_kernel


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("ptr_type", ["*fp64"])
def test_pointer_to_a_type_metal_lacks_is_a_compilation_error(ptr_type):
    # Was a bare TypeError("type f64 has no Metal equivalent") from types.py, naming neither the
    # kernel nor the argument (a float64 torch tensor passed to any kernel hit it).
    with pytest.raises(CompilationError) as ei:
        compile_kernel(copy_kernel, {"src_ptr": ptr_type, "dst_ptr": ptr_type, "n": "i32"}, {"BLOCK": 32}, 1)
    err = ei.value
    assert err.kernel and "copy_kernel" in str(err)
    assert "argument 'src_ptr'" in str(err) and "Metal does not support" in str(err)


def test_supported_pointer_types_still_compile():
    for t in ("*fp32", "*fp16", "*bf16", "*i8", "*u8", "*i64", "*i1"):
        compile_kernel(copy_kernel, {"src_ptr": t, "dst_ptr": t, "n": "i32"}, {"BLOCK": 32}, 1)
