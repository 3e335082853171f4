"""Conversions of Triton's fp8e4b15 format (the backend's `convert_custom_types` codegen hook).

fp8e4b15 has no MLIR float type (Triton builds it as `i8`), so the front end asks the backend
to convert it (`semantic.cast` -> `codegen_fns["convert_custom_types"]`). CUDA does it with
inline PTX (triton/language/extra/cuda/utils.py); we build the same bit manipulation from
ordinary integer ops, so that it lowers like any other code and gives CUDA's results:

- the format is fp16's bit pattern with the top exponent bit and the low 7 mantissa bits
  dropped: 1 sign, 4 exponent (bias 15), 3 mantissa bits; no inf, no NaN (0x7f/0xff are
  +-1.875, as CUDA's upcast gives);
- to fp8e4b15: fp32 goes to fp16 first rounding toward zero, bf16 through fp32 (exact);
  the magnitude is clamped to 1.75 (0x3F00 in fp16; NaN and inf too), then rounded to the
  nearest with ties away from zero (CUDA adds half an ulp and truncates), and the sign kept.
"""

from __future__ import annotations

from triton.language import core


def _i32(v: int, _semantic) -> core.tensor:
    return _semantic.to_tensor(v)


@core.builtin
def convert_custom_types(arg, dst_ty, fp_downcast_rounding=None, _semantic=None):
    s = _semantic
    src = arg.type.scalar
    dst = dst_ty.scalar if hasattr(dst_ty, "scalar") else dst_ty
    if src.is_fp8e4b15():
        # byte -> fp16 bits: sign to bit 15, the 7 magnitude bits to bits 13..7
        u = s.cast(s.bitcast(arg, core.uint8), core.int32)
        sign = s.shl(s.and_(u, _i32(0x80, s)), _i32(8, s))
        mag = s.shl(s.and_(u, _i32(0x7F, s)), _i32(7, s))
        h = s.bitcast(s.cast(s.or_(sign, mag), core.int16), core.float16)
        if dst.is_fp16():
            return h
        if dst.is_fp32() or dst.is_bf16():
            return s.cast(s.cast(h, core.float32), dst)  # exact
        raise ValueError(f"conversion from fp8e4b15 to {dst} is not supported by the mps backend")
    if not dst.is_fp8e4b15():
        raise ValueError(f"convert_custom_types: {src} -> {dst} does not involve fp8e4b15")
    x = arg
    if src.is_bf16():
        x = s.cast(x, core.float32)
        src = core.float32
    if src.is_fp32():
        x = s.cast(x, core.float16, fp_downcast_rounding="rtz")
    elif not src.is_fp16():
        raise ValueError(f"conversion from {src} to fp8e4b15 is not supported by the mps backend")
    b = s.cast(s.bitcast(x, core.int16), core.int32)  # sign-extended fp16 bits
    sign = s.and_(s.lshr(b, _i32(8, s)), _i32(0x80, s))
    mag = s.minimum(s.and_(b, _i32(0x7FFF, s)), _i32(0x3F00, s), core.PropagateNan.NONE)
    byte = s.lshr(s.add(s.shl(mag, _i32(1, s)), _i32(0x80, s), False), _i32(8, s))  # ties away from 0
    r = s.cast(s.or_(byte, sign), core.int8)
    return core.tensor(r.handle, dst_ty)
