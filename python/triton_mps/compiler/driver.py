"""The compiler driver: TTGIR module -> one MSL kernel, in three named steps.

- plan_kernel: analyse the module before lowering (its public function, the [[buffer]] bindings,
  the hidden debug buffer and lock table, device coherence: effects.py) into a `Plan`, with the
  compile `Options`; rejects what cannot be lowered (too many bindings, too many elements).
- lower: one pass over the public function (lowering.function_body), reading the plan.
- assemble: the MSL text (prelude, packed struct, helpers, callees, the kernel) and the
  `CompiledMSL` the launcher binds it with (abi.py: the kernel ABI and its metadata).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ops  # noqa: F401  (registers every lowering)
from .abi import (
    MAX_BINDINGS,
    ArgInfo,
    CompiledMSL,
    debug_metadata,
    effect_threads_hint,
    flatten_signature,
    lock_metadata,
    uses_device_fence,
)
from .coherence import device_ptr
from .effects import effect_threads, module_uses_debug, module_uses_device_fence, module_uses_locks, written_args
from .errors import CompilationError
from .ir import Function, Module, read_module
from .lowering import KernelState, LoweringContext, function_body
from .mslib import fp64, macros
from .mslib.registry import use_in
from .names import legal_kernel_name
from .types import BY_TRITON, PointerType, ScalarType, msl_bytes

__all__ = ["compile_ttgir", "plan_kernel", "lower", "assemble", "Plan", "Options"]

# Elements of one tensor a thread may hold. Every element is its own MSL variable (the
# lowering unrolls per register), so the MSL, and the time to compile it on the simulator,
# grow faster than the element count. Measured (a load-add-store kernel, num_warps=4, memcheck
# on, 2-core x86-64): 512 elements per thread 4.6 s idle; 1024 took 2.6x as long as 512 on the
# same host under load (238.8 s vs 91.2 s at load 18), so ~12 s idle; 8192 (a block of 2**20,
# Triton's largest) was still compiling after 300 s (5.5 MB of MSL). Above the limit the
# kernel is rejected before any MSL is written.
MAX_ELEMENTS_PER_THREAD = 1024
MAX_ELEMENTS_NOTE = "every element is unrolled: about 12 s of compile at 1024 per thread, over 300 s at 8192"

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
#ifndef TMPS_FLOPS
#define TMPS_FLOPS(n)
#endif
"""


@dataclass(frozen=True)
class Options:
    """The compile options a lowering reads (Triton's, through backend/compiler.py)."""

    # Bytes of threadgroup memory the lowerings may plan with (the kernel config's
    # shared_memory); None: Metal's 32 KiB (lowering.scratch_limit).
    scratch_limit: int | None = None
    # Triton's enable_fp_fusion: mul+add pairs become fma() (ops/elementwise.py).
    fp_fusion: bool = True


@dataclass
class Bindings:
    """The kernel's [[buffer]] bindings (abi.py): one per runtime argument, or the scalars packed
    into one struct, then the hidden buffers."""

    params: list[str]  # kernel parameters of the arguments (and the packed struct)
    args: list[ArgInfo]
    exprs: list[str]  # the MSL expression each function argument is read as
    fields: list[str]  # the packed struct's fields ([] when not packed)
    pack_at: int  # the packed struct's binding, -1 if none
    debug: int | None  # tmps_dbg's binding when the module has asserts or prints
    locks: int | None  # tmps_locks's binding when the module has 64-bit atomics


@dataclass
class Plan:
    """What the analysis of the TTGIR module decides before the one lowering pass."""

    kernel_name: str  # Triton's name (errors)
    msl_name: str  # the MSL function's name (names.legal_kernel_name)
    num_warps: int
    module: Module
    func: Function  # the public function
    names: list[str]  # runtime argument names, in func.args order
    bindings: Bindings
    coherent: bool  # device-scope fences: every pointer coherent(device) (coherence.py)
    options: Options


@dataclass
class Lowered:
    state: KernelState
    prologue: list[str]
    body: list[str]


def compile_ttgir(mod, *, num_warps: int, signature: dict, constants: dict, kernel_name: str,
                  context=None, scratch_limit: int | None = None, enable_fp_fusion: bool = True) -> CompiledMSL:
    """Lower the public function of a TTGIR module to one MSL kernel for Triton's `kernel_name`.

    The MSL function is named `names.legal_kernel_name(kernel_name)` (the same name unless it is
    an MSL keyword, a Metal library name, ...); `CompiledMSL.name` is that name, which the backend
    stores as the metadata name so that the launcher finds the function. Errors name the kernel
    as Triton does. `scratch_limit`: bytes of threadgroup memory the dot lowerings may plan with
    (the kernel config's shared_memory; None: Metal's 32 KiB): every lowering that stages
    through threadgroup memory plans within it. `enable_fp_fusion` (Triton's option): a float
    multiply whose only use is an add or subtract in the same block becomes one fma(); off,
    every multiply and add rounds.

    Three steps: plan (analyse the module: bindings, hidden buffers, coherence, options), lower
    (one pass over the public function, reading the plan), assemble (the MSL text)."""
    if context is None:
        context = mod.context if hasattr(mod, "context") else None
    module = read_module(mod, context, num_warps)
    plan = plan_kernel(module, num_warps=num_warps, signature=signature, kernel_name=kernel_name,
                       options=Options(scratch_limit=scratch_limit, fp_fusion=enable_fp_fusion))
    return assemble(plan, lower(plan))


def plan_kernel(module: Module, *, num_warps: int, signature: dict, kernel_name: str, options: Options) -> Plan:
    """Analyse the module before lowering it: its public function, the bindings, whether it
    needs the hidden buffers and device coherence. Rejects what cannot be lowered."""
    publics = [f for f in module.functions.values() if f.public]
    if len(publics) != 1:
        raise CompilationError(f"expected one public function, found {len(publics)}", kernel=kernel_name)
    func = publics[0]
    _check_elements_per_thread(module, kernel_name, num_warps)
    # Tuple arguments are flattened, depth first, as Triton's function takes them; the launcher
    # flattens the call's arguments the same way (ArgInfo.signature_index counts the leaves).
    leaves = flatten_signature(signature)
    # Triton drops constexpr args (and args specialised as constants) from the function.
    names = [n for n, t in leaves if t != "constexpr"][: len(func.args)]
    if len(names) != len(func.args):
        raise CompilationError(f"the signature names {len(names)} runtime arguments, the kernel has "
                               f"{len(func.args)}", kernel=kernel_name)
    coherent = module_uses_device_fence(module)
    bindings = _plan_bindings(func, names, leaves, kernel_name, debug=module_uses_debug(module),
                              locks=module_uses_locks(module), coherent=coherent)
    return Plan(kernel_name, legal_kernel_name(kernel_name), num_warps, module, func, names, bindings,
                coherent=coherent, options=options)


def _plan_bindings(func: Function, names: list[str], leaves: list, kernel_name: str, *, debug: bool,
                   locks: bool, coherent: bool) -> Bindings:
    """One binding per argument (+ the debug buffer and lock table). Over Metal's 31, scalars are packed."""
    sig_types = dict(leaves)
    sig_index = {n: i for i, (n, _) in enumerate(leaves)}
    pack = _must_pack(func, int(debug) + int(locks), kernel_name)
    params, args_info, arg_exprs, fields = [], [], [], []
    next_binding = 0
    for i, (name, v) in enumerate(zip(names, func.args, strict=True)):
        _check_arg_type(name, v.type, kernel_name)
        index = sig_index.get(name, i)
        if isinstance(v.type, PointerType):
            msl_t = v.type.pointee.msl()
            params.append(f"{device_ptr(msl_t, coherent)} arg{i} [[buffer({next_binding})]]")
            args_info.append(ArgInfo(name, "pointer", msl_t, next_binding, index))
            arg_exprs.append(f"arg{i}")
            next_binding += 1
        elif isinstance(v.type, ScalarType):
            msl_t, pack_t = _scalar_types(v.type, str(sig_types.get(name, "")))
            if pack:
                fields.append(f"  {msl_t} arg{i};")
                args_info.append(ArgInfo(name, "scalar", pack_t, -1, index))
                src = f"tmps_args.arg{i}"
            else:
                params.append(f"constant {msl_t}& arg{i} [[buffer({next_binding})]]")
                args_info.append(ArgInfo(name, "scalar", pack_t, next_binding, index))
                src = f"arg{i}"
                next_binding += 1
            ir_t = v.type.msl()
            arg_exprs.append(src if ir_t == msl_t else f"as_type<{ir_t}>({src})"
                             if v.type.bytes == msl_bytes(msl_t) else f"(({ir_t}){src})")
        else:
            raise CompilationError(f"argument '{name}' has unsupported type {v.type}", kernel=kernel_name)
    pack_at = -1
    if pack and fields:
        pack_at = next_binding
        params.append(f"constant tmps_args_t& tmps_args [[buffer({pack_at})]]")
        next_binding += 1
    # The hidden buffers follow the arguments: the debug buffer, then the lock table.
    return Bindings(params, args_info, arg_exprs, fields, pack_at, debug=next_binding if debug else None,
                    locks=next_binding + int(debug) if locks else None)


def _must_pack(func: Function, hidden: int, kernel_name: str) -> bool:
    """Whether the scalars go into one packed struct: one binding per argument and hidden buffer
    would be over Metal's MAX_BINDINGS. Over it even packed: a CompilationError."""
    n_ptr = sum(isinstance(v.type, PointerType) for v in func.args)
    n_scalar = len(func.args) - n_ptr
    pack = len(func.args) + hidden > MAX_BINDINGS
    if pack and n_ptr + (n_scalar > 0) + hidden > MAX_BINDINGS:
        raise CompilationError(
            f"{n_ptr} pointer arguments{' and the debug/lock buffers' if hidden else ''} need "
            f"{n_ptr + (n_scalar > 0) + hidden} buffer bindings even with the scalars packed; Metal binds at most "
            f"{MAX_BINDINGS} buffers per kernel (argument buffers would allow more: not supported yet)",
            kernel=kernel_name)
    return pack


def _scalar_types(t: ScalarType, sig: str) -> tuple[str, str]:
    """(MSL type the kernel reads, the launcher's packing type) of a scalar argument: the
    signature's type, which also says signedness (u32, u64: the IR has i32, i64). fp64: the
    kernel reads binary64 bits as ulong; the launcher packs a Python float as 8 bytes of double
    ("double" is its packing type, not an MSL type)."""
    msl_t = BY_TRITON[sig].msl if sig in BY_TRITON else t.msl()
    if t.name == "f64":
        return "ulong", "double"
    return msl_t, msl_t


def lower(plan: Plan) -> Lowered:
    """The one lowering pass over the public function, with the plan's options and coherence."""
    state = KernelState(plan.kernel_name, plan.num_warps, plan.module)
    state.fp_fusion = plan.options.fp_fusion
    state.scratch_budget = plan.options.scratch_limit
    state.coherent = plan.coherent  # every pointer type spelled coherent (coherence.py)
    state.kernel_func = plan.func
    if plan.coherent:
        use_in(state.helpers, macros.COHERENT)  # first: every pointer type uses it

    def on_return(ctx: LoweringContext, op):
        ctx.e.line("return;")

    prologue, body = function_body(state, plan.func, [[x] for x in plan.bindings.exprs], on_return=on_return)
    if any(k.startswith("tmps_f64") for k in state.helpers):
        fp64.notice(plan.kernel_name)
    return Lowered(state, prologue, body)


def assemble(plan: Plan, lowered: Lowered) -> CompiledMSL:
    """The MSL text of the kernel (prelude, packed struct, helpers, callees, the kernel) and what
    the launcher needs to bind it."""
    state, b = lowered.state, plan.bindings
    hidden_params, debug, locks = _hidden_buffers(plan, state)
    params = b.params + hidden_params + [
        "uint3 tmps_pid [[threadgroup_position_in_grid]]",
        "uint3 tmps_npid [[threadgroups_per_grid]]",
        "uint tmps_tid [[thread_index_in_threadgroup]]",
    ]
    out = [_PRELUDE]
    if b.fields:
        # Natural alignment, in order: the launcher's packing rule (csrc/launcher.h).
        out.append("struct tmps_args_t {\n" + "\n".join(b.fields) + "\n};")
    out += list(state.helpers.values())
    out += list(state.functions_emitted.values())
    hidden = b.debug is not None or b.locks is not None
    hint = _effect_threads_hint(state, plan.func, hidden, lowered.prologue + lowered.body)
    if hint:
        out.append(hint)
    out.append(f"kernel void {plan.msl_name}(" + ",\n    ".join(params) + ") {")
    uses_smem = bool(state.scratch_bytes or state.functions_emitted)
    if uses_smem:
        # uint4: 16-byte alignment for the scratch's vector accesses (compiler/scratch.py)
        words = max(state.scratch_bytes, 16) // 16
        out.append(f"  threadgroup uint4 tmps_smem_words[{words}];")
        out.append("  threadgroup uchar* tmps_smem = (threadgroup uchar*)tmps_smem_words;")
    out.append("  uint tmps_lane = tmps_tid & 31u;")
    out.append("  uint tmps_warp = tmps_tid >> 5u;")
    out += ["  " + p for p in lowered.prologue]
    out += lowered.body
    out.append("}")
    msl = "\n".join(out) + "\n"
    if uses_device_fence(msl) != plan.coherent:  # effects.module_uses_device_fence and ops/memory.py disagree
        what = "planned but not emitted" if plan.coherent else "emitted but not planned"
        raise CompilationError(f"internal: device fences {what}", kernel=plan.kernel_name)
    return CompiledMSL(msl=msl, name=plan.msl_name, num_warps=plan.num_warps,
                       shared=max(state.scratch_bytes, 16) if uses_smem else 0,
                       args=b.args, pack_scalars_at=b.pack_at, debug=debug, locks=locks,
                       written=[plan.names[i] for i in sorted(written_args(plan.func))])


def _hidden_buffers(plan: Plan, state: KernelState) -> tuple[list[str], dict | None, dict | None]:
    """The kernel parameters of the debug buffer (when lowering found asserts or prints) and the
    lock table (when any function has 64-bit atomics: calls pass it on, control_flow.py), and
    their metadata (abi.debug_metadata, abi.lock_metadata)."""
    b, params = plan.bindings, []
    debug = locks = None
    if state.debug_sites:
        if b.debug is None or b.debug >= MAX_BINDINGS:  # the plan and lowering disagree
            raise CompilationError("internal: debug buffer binding not reserved", kernel=plan.kernel_name)
        params.append(f"device uint* tmps_dbg [[buffer({b.debug})]]")
        debug = debug_metadata(b.debug, state.debug_sites)
    if b.locks is not None:
        if b.locks >= MAX_BINDINGS:
            raise CompilationError("internal: lock table binding not reserved", kernel=plan.kernel_name)
        params.append(f"device atomic_uint* tmps_locks [[buffer({b.locks})]]")
        locks = lock_metadata(b.locks)
    return params, debug, locks


def _effect_threads_hint(state: KernelState, func, hidden_buffers: bool, lines: list[str]) -> str:
    """The simulator's hint that threads past N only duplicate lower ones (see
    effects.effect_threads; read by csrc/msl_scanner.cpp), or "". Never given when the
    kernel uses threadgroup memory, atomics, calls or the debug buffer."""
    threads = state.num_warps * 32
    if state.scratch_bytes or state.functions_emitted or state.debug_sites or hidden_buffers:
        return ""
    text = "\n".join([*lines, *state.helpers.values()])
    if "threadgroup" in text or "atomic" in text:
        return ""
    n = effect_threads(func, state.num_warps)
    if n is None or n >= threads:
        return ""
    return effect_threads_hint(n)


def _check_elements_per_thread(module, kernel: str, num_warps: int) -> None:
    """A block so large that each thread holds more than MAX_ELEMENTS_PER_THREAD elements of one
    tensor (tl.arange(0, 2**20) with 4 warps: 8192) would be unrolled into megabytes of MSL that
    take minutes to compile: reject it first, naming the limit, the line and what to change."""
    found: list = []

    def staged_by_dots(v) -> bool:
        # Operands only tt.dot reads: the dot stages them through threadgroup memory from
        # before their conversion (ops/dot.py), so they are never unrolled per thread.
        return bool(v.users) and all(u.name == "tt.dot" and v is not u.operands[2] for u in v.users)

    def too_big(op) -> bool:
        for v in op.results:
            if v.layout is not None and v.layout.num_regs > MAX_ELEMENTS_PER_THREAD and not staged_by_dots(v):
                found.append((op, v))
                return True
        return False

    if not module.any_op(too_big):
        return
    op, v = found[0]
    shape = "x".join(str(d) for d in v.type.shape)
    threads = num_warps * 32
    raise CompilationError(
        f"a tensor of {shape} elements puts {v.layout.num_regs} elements in each of the {threads} threads "
        f"(num_warps={num_warps}); the mps backend allows at most {MAX_ELEMENTS_PER_THREAD} per thread "
        f"({MAX_ELEMENTS_NOTE}): use a smaller block (at most {MAX_ELEMENTS_PER_THREAD * threads} elements "
        f"with num_warps={num_warps}, {MAX_ELEMENTS_PER_THREAD * 1024} with num_warps=32) and loop over the rest",
        op=op.name, kernel=kernel, file=op.file, line=op.line)


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
