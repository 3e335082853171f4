"""Module analyses the compiler and launcher act on: which pointer arguments a kernel may write
through (for read-only arrays at launch), which threads can have a side effect, and whether a
module needs the hidden debug buffer or the 64-bit-atomics lock table (abi.py) or device-scope
fences (coherence.py).

Written arguments:

A forward may-alias analysis over the TTGIR of one function, conservative by construction:
every pointer-typed value carries the set of pointer arguments it may point into, computed to
a fixed point (loop-carried values through region block arguments and yields). A pointer
argument is *written* when a value that may point into it reaches any op outside a short list
of ops known only to compute or read pointers (stores, atomics, calls, inline assembly and
every op not listed count as writes). A pointer of unknown origin (loaded from memory, made
from an integer, returned by a call) may point anywhere: a write through it writes every
argument. So an argument reported unwritten is never stored through.
"""

from __future__ import annotations

from .ir import Block, Function, Module, Op, Value
from .types import PointerType, ScalarType, TensorType, elem_of

# Ops that take pointers without writing through them. Pointer-typed results of these carry
# their operands' targets; anything else with a pointer operand is treated as a write.
_READS_OR_COMPUTES = frozenset({
    "tt.load", "tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans",
    "tt.join", "tt.split", "tt.cat", "tt.ptr_to_int", "tt.bitcast", "tt.advance", "tt.return",
    "ttg.convert_layout", "arith.select", "arith.cmpi", "scf.yield", "scf.condition", "scf.for", "scf.while",
    "scf.if", "cf.br", "cf.cond_br", "tt.reduce.return", "tt.scan.return", "tt.assume", "ttg.local_alloc",
    "tt.print", "tt.assert",
})
_ANY = -1  # "may point into any argument"


def _is_pointer(v: Value) -> bool:
    t = v.type
    if isinstance(t, TensorType):
        t = t.elem
    return isinstance(t, PointerType)


def written_args(func: Function) -> set[int]:
    """Indices (in func.args) of pointer arguments the function may store through."""
    pointer_args = [i for i, a in enumerate(func.args) if _is_pointer(a)]
    targets: dict[int, set[int]] = {func.args[i].id: {i} for i in pointer_args}
    written: set[int] = set()

    def of(v: Value) -> set[int]:
        return targets.get(v.id, set())

    def add(v: Value, s: set[int]) -> bool:
        if not s or not _is_pointer(v):
            return False
        cur = targets.setdefault(v.id, set())
        if s <= cur:
            return False
        cur |= s
        return True

    def visit_block(block: Block) -> bool:
        changed = False
        for op in block.ops:
            changed |= visit_op(op)
        return changed

    def visit_op(op: Op) -> bool:
        changed = False
        operand_targets: set[int] = set()
        for v in op.operands:
            operand_targets |= of(v)
        if op.regions:
            # Loop-carried and yielded pointers: block arguments and results may hold anything
            # the op's operands or its regions' terminators hold.
            flowing = set(operand_targets)
            for region in op.regions:
                for block in region.blocks:
                    changed |= visit_block(block)
                    if block.ops:
                        for v in block.ops[-1].operands:
                            flowing |= of(v)
            for region in op.regions:
                for block in region.blocks:
                    for a in block.args:
                        changed |= add(a, flowing)
            for r in op.results:
                changed |= add(r, flowing)
        else:
            # A pointer made from no pointer (int_to_ptr), loaded from memory or returned by a
            # call may point anywhere; else it points where its pointer operands do (those may
            # still be untagged on a first pass through a loop: the fixed point fills them in).
            from_pointers = any(_is_pointer(v) for v in op.operands) and op.name not in ("tt.load", "tt.call")
            for r in op.results:
                changed |= add(r, operand_targets if from_pointers else {_ANY})
        if operand_targets and op.name not in _READS_OR_COMPUTES:
            before = len(written)
            written.update(operand_targets)
            changed |= len(written) != before
        return changed

    while any([visit_block(b) for b in func.blocks]):  # (a list: visit every block each round)
        pass
    if _ANY in written:
        return set(pointer_args)
    return {i for i in written if i != _ANY}


# Ops whose lowering has no side effect and keeps each thread to its own registers, except
# through threadgroup memory or SIMD-group functions (which effect_threads' callers exclude).
_THREAD_LOCAL_PREFIXES = ("arith.", "math.", "scf.")
_THREAD_LOCAL = frozenset({
    "tt.load", "tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.make_range",
    "tt.get_program_id", "tt.get_num_programs", "tt.bitcast", "tt.fp_to_fp", "tt.int_to_ptr",
    "tt.ptr_to_int", "tt.precise_sqrt", "tt.precise_divf", "tt.mulhiui", "tt.clampf",
    "tt.extern_elementwise", "tt.reshape", "tt.trans", "tt.join", "tt.split", "tt.cat",
    "tt.reduce", "tt.reduce.return", "tt.scan", "tt.scan.return", "tt.return", "tt.assume",
    "llvm.intr.assume", "ub.poison", "tt.unsplat", "ttg.convert_layout", "tt.dot",
    "tt.map_elementwise", "tt.map_elementwise.return", "cf.br", "cf.cond_br",
})


def effect_threads(func: Function, num_warps: int) -> int | None:
    """The number of threads of a threadgroup, counted from thread 0, that can have a side
    effect: tt.store is done by the threads that own an element (its layout's owner predicate,
    ops/memory.py; a scalar store by thread 0), and every other op is side-effect free and
    thread-local. None when some op may do more (atomics, prints, calls, inline assembly, any
    op not listed). Threads past the bound only duplicate lower ones, so the simulator may skip
    them when nothing else lets threads communicate (the caller checks threadgroup memory; the
    simulator, barriers and SIMD-group functions)."""
    threads = num_warps * 32
    bound = 0

    def visit(block: Block) -> bool:
        nonlocal bound
        for op in block.ops:
            if op.name == "tt.store":
                ptr = op.operands[0]
                if not isinstance(ptr.type, TensorType):
                    bound = max(bound, 1)
                elif ptr.layout is None:
                    return False
                else:
                    lay = ptr.layout
                    lane = (len(lay.lane_bases) and (1 << len(lay.lane_bases)) - 1) & ~lay.lane_dup_mask
                    warp = (num_warps - 1) & ~lay.warp_dup_mask
                    bound = max(bound, warp * 32 + lane + 1)
            elif not (op.name in _THREAD_LOCAL or op.name.startswith(_THREAD_LOCAL_PREFIXES)):
                return False
            if not all(visit(b) for r in op.regions for b in r.blocks):
                return False
        return True

    if not all(visit(b) for b in func.blocks):
        return None
    return min(bound, threads) if bound else 1


# ---- hidden bindings (decided before lowering: each takes a [[buffer]] binding) ----------------

DEBUG_OPS = ("tt.assert", "tt.print")


def module_uses_debug(module: Module) -> bool:
    """Whether any function of the module has a tt.assert or tt.print (ops/debug.py)."""
    return module.any_op(lambda op: op.name in DEBUG_OPS)


def _is_atomic64(op: Op) -> bool:
    if op.name not in ("tt.atomic_rmw", "tt.atomic_cas") or not op.results:
        return False
    t = elem_of(op.results[0].type)
    return isinstance(t, ScalarType) and t.bits == 64


def module_uses_locks(module: Module) -> bool:
    """Whether any function has a 64-bit atomic (the lock table, ops/memory.py)."""
    return module.any_op(_is_atomic64)


# ---- device-scope ordering (decided before lowering: coherence.py) -----------------------------

_ORDERING_SEMS = ("acq_rel", "release", "acquire")


def _fences(op: Op) -> bool:
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas"):
        # Triton's default semantics is acq_rel; a 64-bit atomic's lock helper fences anyway.
        return op.attrs.get("sem", "acq_rel") in _ORDERING_SEMS or _is_atomic64(op)
    return op.name == "tt.atomic_poll" and op.attrs.get("sem") == "acquire"


def module_uses_device_fence(module: Module) -> bool:
    """Whether lowering the module emits a device-scope fence (TMPS_DEVICE_FENCE, ops/memory.py):
    an atomic_rmw or atomic_cas with release or acquire semantics (Triton's default acq_rel) or on
    64 bits (the lock helper fences), or an acquire atomic_poll. Such a kernel is lowered with
    coherent(device) pointers (coherence.py); the driver checks the MSL agrees."""
    return module.any_op(_fences)
