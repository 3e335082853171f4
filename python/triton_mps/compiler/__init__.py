"""TTGIR -> MSL: the compiler front of the Metal backend (see abi.py for the kernel ABI)."""

from __future__ import annotations

from . import ops  # noqa: F401  (registers every lowering)
from .abi import ArgInfo, CompiledMSL
from .errors import CompilationError
from .ir import read_module
from .lowering import KernelState, LoweringContext, function_body
from .names import legal_kernel_name
from .ops import debug as debug_ops
from .ops import memory as memory_ops
from .types import PointerType, ScalarType

__all__ = ["compile_ttgir", "CompilationError", "CompiledMSL", "ArgInfo"]

# Triton signature strings for scalars -> MSL parameter types (what the launcher packs).
_SIG_SCALARS = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u1": "bool", "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "fp16": "half", "bf16": "bfloat", "fp32": "float", "f32": "float",
}
MAX_BINDINGS = 31

# Math: Triton's semantics, stated in the source as well as in the pipeline's compile options
# (MTLMathModeSafe, the driver): no fast-math reassociation, and no contraction of a*b+c by
# Metal's compiler on its own (`fp contract(off)`, MSL 3.2+; older MSL has only the compile
# option). Fused multiply-adds are the compiler's decision: explicit fma() where
# `enable_fp_fusion` allows (ops/elementwise.py), so Metal and the simulator (-ffp-contract=off)
# round alike.
_PRELUDE = """#include <metal_stdlib>
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif
using namespace metal;
"""


def compile_ttgir(mod, *, num_warps: int, signature: dict, constants: dict, kernel_name: str,
                  context=None, enable_fp_fusion: bool = True) -> CompiledMSL:
    """Lower the public function of a TTGIR module to one MSL kernel for Triton's `kernel_name`.

    The MSL function is named `names.legal_kernel_name(kernel_name)` (the same name unless it is
    an MSL keyword, a Metal library name, ...); `CompiledMSL.name` is that name, which the backend
    stores as the metadata name so that the launcher finds the function. Errors name the kernel
    as Triton does. `enable_fp_fusion` (Triton's option): a float multiply whose only use is an
    add or subtract in the same block becomes one fma(); off, every multiply and add rounds."""
    if context is None:
        context = mod.context if hasattr(mod, "context") else None
    module = read_module(mod, context, num_warps)
    publics = [f for f in module.functions.values() if f.public]
    if len(publics) != 1:
        raise CompilationError(f"expected one public function, found {len(publics)}", kernel=kernel_name)
    func = publics[0]
    state = KernelState(kernel_name, num_warps, module)
    state.fp_fusion = enable_fp_fusion

    names = [n for n, t in signature.items() if t != "constexpr" and n not in (constants or {})]
    sig_index = {n: i for i, n in enumerate(signature)}
    if len(names) != len(func.args):
        # Triton drops constexpr args (and args specialised as constants) from the function.
        names = [n for n, t in signature.items() if t != "constexpr"][: len(func.args)]
    # Bindings: one per argument (+ the debug buffer). Over Metal's 31, scalars are packed.
    wants_debug = debug_ops.module_uses_debug(module)
    wants_locks = memory_ops.module_uses_locks(module)
    hidden = int(wants_debug) + int(wants_locks)
    n_ptr = sum(isinstance(v.type, PointerType) for v in func.args)
    n_scalar = len(func.args) - n_ptr
    pack = len(func.args) + hidden > MAX_BINDINGS
    if pack and n_ptr + (n_scalar > 0) + hidden > MAX_BINDINGS:
        raise CompilationError(
            f"{n_ptr} pointer arguments{' and the debug/lock buffers' if hidden else ''} need "
            f"{n_ptr + (n_scalar > 0) + hidden} buffer bindings even with the scalars packed; Metal binds at most "
            f"{MAX_BINDINGS} buffers per kernel (argument buffers would allow more: not supported yet)",
            kernel=kernel_name)
    params, args_info, arg_exprs, fields = [], [], [], []
    next_binding = 0
    if len(names) != len(func.args):
        raise CompilationError(f"the signature names {len(names)} runtime arguments, the kernel has "
                               f"{len(func.args)}", kernel=kernel_name)
    for i, (name, v) in enumerate(zip(names, func.args, strict=True)):
        _check_arg_type(name, v.type, kernel_name)
        sig = str(signature.get(name, ""))
        if isinstance(v.type, PointerType):
            msl_t = v.type.pointee.msl()
            params.append(f"device {msl_t}* arg{i} [[buffer({next_binding})]]")
            args_info.append(ArgInfo(name, "pointer", msl_t, next_binding, sig_index.get(name, i)))
            arg_exprs.append(f"arg{i}")
            next_binding += 1
        elif isinstance(v.type, ScalarType):
            msl_t = _SIG_SCALARS.get(sig, v.type.msl())
            if pack:
                fields.append(f"  {msl_t} arg{i};")
                args_info.append(ArgInfo(name, "scalar", msl_t, -1, sig_index.get(name, i)))
                src = f"tmps_args.arg{i}"
            else:
                params.append(f"constant {msl_t}& arg{i} [[buffer({next_binding})]]")
                args_info.append(ArgInfo(name, "scalar", msl_t, next_binding, sig_index.get(name, i)))
                src = f"arg{i}"
                next_binding += 1
            ir_t = v.type.msl()
            arg_exprs.append(src if ir_t == msl_t else f"as_type<{ir_t}>({src})"
                             if v.type.bytes == _size(msl_t) else f"(({ir_t}){src})")
        else:
            raise CompilationError(f"argument '{name}' has unsupported type {v.type}", kernel=kernel_name)
    pack_at = -1
    if pack and fields:
        pack_at = next_binding
        params.append(f"constant tmps_args_t& tmps_args [[buffer({pack_at})]]")
        next_binding += 1
    debug_binding = next_binding

    def on_return(ctx: LoweringContext, op):
        ctx.e.line("return;")

    prologue, body = function_body(state, func, [[x] for x in arg_exprs], on_return=on_return)
    debug = None
    if state.debug_sites:
        if not wants_debug or debug_binding >= MAX_BINDINGS:  # the scan above and lowering disagree
            raise CompilationError("internal: debug buffer binding not reserved", kernel=kernel_name)
        params.append(f"device uint* tmps_dbg [[buffer({debug_binding})]]")
        debug = debug_ops.metadata(state, debug_binding)
    locks = None
    if wants_locks:  # also when only a callee uses it: calls pass the table on (control_flow.py)
        lock_binding = debug_binding + int(wants_debug)
        if lock_binding >= MAX_BINDINGS:
            raise CompilationError("internal: lock table binding not reserved", kernel=kernel_name)
        params.append(f"device atomic_uint* tmps_locks [[buffer({lock_binding})]]")
        locks = {"binding": lock_binding, "words": memory_ops.LOCK_WORDS}
    params += [
        "uint3 tmps_pid [[threadgroup_position_in_grid]]",
        "uint3 tmps_npid [[threadgroups_per_grid]]",
        "uint tmps_tid [[thread_index_in_threadgroup]]",
    ]
    out = [_PRELUDE]
    if fields:
        # Natural alignment, in order: the launcher's packing rule (csrc/launcher.h).
        out.append("struct tmps_args_t {\n" + "\n".join(fields) + "\n};")
    out += list(state.helpers.values())
    out += list(state.functions_emitted.values())
    msl_name = legal_kernel_name(kernel_name)
    out.append(f"kernel void {msl_name}(" + ",\n    ".join(params) + ") {")
    if state.scratch_bytes or state.functions_emitted:
        words = max(state.scratch_bytes, 16) // 8
        out.append(f"  threadgroup ulong tmps_smem_words[{words}];")
        out.append("  threadgroup uchar* tmps_smem = (threadgroup uchar*)tmps_smem_words;")
    out.append("  uint tmps_lane = tmps_tid & 31u;")
    out.append("  uint tmps_warp = tmps_tid >> 5u;")
    out += ["  " + p for p in prologue]
    out += body
    out.append("}")
    msl = "\n".join(out) + "\n"
    return CompiledMSL(msl=msl, name=msl_name, num_warps=num_warps,
                       shared=max(state.scratch_bytes, 16) if (state.scratch_bytes or state.functions_emitted) else 0,
                       args=args_info, pack_scalars_at=pack_at, debug=debug, locks=locks)


def _check_arg_type(name: str, t, kernel: str) -> None:
    """An argument whose element type Metal lacks (f64, fp8) fails here, naming the argument,
    instead of as a bare TypeError from types.py."""
    elem = t.pointee if isinstance(t, PointerType) else t
    if isinstance(elem, ScalarType):
        try:
            elem.msl()
        except TypeError:
            what = "points to" if isinstance(t, PointerType) else "has type"
            raise CompilationError(
                f"argument '{name}' {what} {elem.name}, which Metal does not support (no 64-bit "
                f"floats); convert the data first (e.g. to float32)", kernel=kernel) from None


def _size(msl_t: str) -> int:
    return {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
            "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}[msl_t]
