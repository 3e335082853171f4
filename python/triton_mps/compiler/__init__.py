"""TTGIR -> MSL: the compiler front of the Metal backend (see abi.py for the kernel ABI)."""

from __future__ import annotations

import time

from . import ops  # noqa: F401  (registers every lowering)
from .abi import ArgInfo, CompiledMSL
from .errors import CompilationError
from .ir import read_module
from .lowering import KernelState, LoweringContext, function_body
from .types import PointerType, ScalarType, TensorType

__all__ = ["compile_ttgir", "CompilationError", "CompiledMSL", "ArgInfo"]

# Triton signature strings for scalars -> MSL parameter types (what the launcher packs).
_SIG_SCALARS = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u1": "bool", "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "fp16": "half", "bf16": "bfloat", "fp32": "float", "f32": "float",
}
MAX_BINDINGS = 31

_PRELUDE = """#include <metal_stdlib>
using namespace metal;
"""


def compile_ttgir(mod, *, num_warps: int, signature: dict, constants: dict, kernel_name: str,
                  context=None) -> CompiledMSL:
    """Lower the public function of a TTGIR module to one MSL kernel named `kernel_name`."""
    if context is None:
        context = mod.context if hasattr(mod, "context") else None
    module = read_module(mod, context, num_warps)
    publics = [f for f in module.functions.values() if f.public]
    if len(publics) != 1:
        raise CompilationError(f"expected one public function, found {len(publics)}", kernel=kernel_name)
    func = publics[0]
    state = KernelState(kernel_name, num_warps, module)

    names = [n for n, t in signature.items() if t != "constexpr" and n not in (constants or {})]
    sig_index = {n: i for i, n in enumerate(signature)}
    if len(names) != len(func.args):
        # Triton drops constexpr args (and args specialised as constants) from the function.
        names = [n for n, t in signature.items() if t != "constexpr"][: len(func.args)]
    if len(func.args) > MAX_BINDINGS:
        raise CompilationError(f"{len(func.args)} kernel arguments: more than {MAX_BINDINGS} is not supported yet",
                               kernel=kernel_name)
    params, args_info, arg_exprs = [], [], []
    for i, (name, v) in enumerate(zip(names, func.args)):
        sig = str(signature.get(name, ""))
        if isinstance(v.type, PointerType):
            msl_t = v.type.pointee.msl()
            params.append(f"device {msl_t}* arg{i} [[buffer({i})]]")
            args_info.append(ArgInfo(name, "pointer", msl_t, i, sig_index.get(name, i)))
            arg_exprs.append(f"arg{i}")
        elif isinstance(v.type, ScalarType):
            msl_t = _SIG_SCALARS.get(sig, v.type.msl())
            params.append(f"constant {msl_t}& arg{i} [[buffer({i})]]")
            args_info.append(ArgInfo(name, "scalar", msl_t, i, sig_index.get(name, i)))
            ir_t = v.type.msl()
            arg_exprs.append(f"arg{i}" if ir_t == msl_t else f"as_type<{ir_t}>(arg{i})"
                             if v.type.bytes == _size(msl_t) else f"(({ir_t})arg{i})")
        else:
            raise CompilationError(f"argument '{name}' has unsupported type {v.type}", kernel=kernel_name)

    def on_return(ctx: LoweringContext, op):
        ctx.e.line("return;")

    t0 = time.perf_counter()
    prologue, body = function_body(state, func, [[x] for x in arg_exprs], on_return=on_return)
    params += [
        "uint3 tmps_pid [[threadgroup_position_in_grid]]",
        "uint3 tmps_npid [[threadgroups_per_grid]]",
        "uint tmps_tid [[thread_index_in_threadgroup]]",
    ]
    out = [_PRELUDE]
    out += list(state.helpers.values())
    out += list(state.functions_emitted.values())
    out.append(f"kernel void {kernel_name}(" + ",\n    ".join(params) + ") {")
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
    return CompiledMSL(msl=msl, name=kernel_name, num_warps=num_warps,
                       shared=max(state.scratch_bytes, 16) if (state.scratch_bytes or state.functions_emitted) else 0,
                       args=args_info)


def _size(msl_t: str) -> int:
    return {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
            "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}[msl_t]
