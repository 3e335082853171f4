"""The per-function lowering context and the op table.

Value model: a scalar SSA value is one MSL expression; a tensor with a distributed layout is
`layout.num_regs` expressions per thread (register r holds the element at
`layout.reg_coord(r) ^ lane part ^ warp part`). Ops are lowered by functions registered with
`@lowers("dialect.op", ...)`; each reads its operands with `ctx.expr(v, r)` and defines its
results with `ctx.define(v, fn_per_register)`.

API summary (stable; ops/*.py rely on it):
  ctx.expr(v, r=0) / ctx.exprs(v)     MSL expression of register r of v (scalars ignore r)
  ctx.define(v, fn|list|str, hint)    declare `T name_r = expr;` per register; returns names
  ctx.bind(v, exprs)                  alias v to existing expressions (no code emitted)
  ctx.declare(v, init=None)           mutable variables for v (loop-carried); returns names
  ctx.assign(names, exprs)            `name = expr;` (parallel-safe)
  ctx.layout(v) / ctx.num_regs(v)     layout of a tensor value (error if none)
  ctx.msl_type(v_or_type)             MSL element type (`float`, `device half*`, ...)
  ctx.coord(layout, r)                per-dim MSL coordinate expressions (uint) of register r
  ctx.thread_offset(layout, d)        name of this thread's lane^warp part along dim d (hoisted)
  ctx.linear_index(layout, r)         row-major element index expression (uint)
  ctx.owner_predicate(layout)         bool expr true in threads that own (not duplicate) their
                                      elements, or None when no thread duplicates
  ctx.register_map(src, dst, project) compile-time register mapping (layout.register_map)
  ctx.scratch(nbytes, msl_type)       `(threadgroup T*)` expression into the shared scratch array
  ctx.barrier()                       threadgroup barrier (threadgroup memory)
  ctx.lower_block(block, args)        lower a region block with its args bound to expressions
                                      (lists per value); returns the terminator's operand
                                      expressions; works for scalar regions (reduce combine)
  ctx.literal(value, scalar_type)     MSL literal of a Python value
  ctx.error(op, msg)                  raise CompilationError naming op, kernel and line
  ctx.e                               the Emitter (line(), block(), fresh(), helper())
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .emitter import Emitter
from .errors import CompilationError, ThreadgroupMemoryError
from .ir import Block, Function, Op, Value
from .layout import Layout, register_map
from .mslib import fp8, fp64
from .types import PointerType, TensorType, elem_of

if TYPE_CHECKING:
    from .axis_info import AxisAnalysis

LOWERINGS: dict[str, Callable] = {}

# Metal's threadgroup memory per threadgroup on every Apple GPU. Each op's exchange through the
# shared scratch array must fit it; ops whose data is larger work in rounds (see
# scratch.py `windows`).
SCRATCH_LIMIT = 32 * 1024


def scratch_limit(ctx: LoweringContext) -> int:
    """Threadgroup memory a lowering may plan with: SCRATCH_LIMIT (read when used: tests lower
    it to force rounds on small tensors), or less under the kernel config's budget
    (KernelState.scratch_budget)."""
    budget = ctx.state.scratch_budget
    return min(SCRATCH_LIMIT, budget) if budget else SCRATCH_LIMIT


# Hooks `fn(ctx, user_op, value) -> bool`: True when user_op, lowered later, reads `value` (a
# layout conversion's result) only through the conversion's source (tt.dot stages its operands
# into threadgroup memory from before their conversion). A conversion whose every user says so
# is not lowered at all (ops/layout_conversion.py).
STAGES_FROM_SOURCE: list[Callable] = []


@dataclass(frozen=True)
class LoopCarrier:
    """A way to carry some of an scf.for's loop-carried values other than as plain MSL
    variables (tt.dot keeps accumulators in simdgroup matrices over the loop: ops/dot.py).
    The loop lowering (ops/control_flow.py) asks every registered carrier in turn; a position
    claimed by one is not offered to the next."""

    # find(ctx, for_op) -> {carried position: token}: the positions this carrier takes
    find: Callable[[LoweringContext, Op], dict[int, object]]
    # begin(ctx, token, init value) -> names the loop body binds to its block argument
    begin: Callable[[LoweringContext, object, Value], list[str]]
    # end(ctx, token, result value): after the loop, define the scf.for result
    end: Callable[[LoweringContext, object, Value], None]


LOOP_CARRIERS: list[LoopCarrier] = []


# Lowerings of the instances of an op that a predicate selects, consulted before LOWERINGS:
# software float64 registers `@lowers("arith.addf", ..., when=involves_f64)` (ops/float64.py), so
# the float lowerings never test for f64 themselves.
GUARDED_LOWERINGS: list[tuple[Callable[[Op], bool], dict[str, Callable]]] = []


def lowers(*names: str, when: Callable[[Op], bool] | None = None):
    """Register a lowering function `fn(ctx, op)` for the given op names (only for the ops
    `when(op)` selects, ahead of the unguarded lowering, when `when` is given)."""

    def deco(fn):
        if when is None:
            table = LOWERINGS
        else:
            table = next((t for w, t in GUARDED_LOWERINGS if w is when), None)
            if table is None:
                table = {}
                GUARDED_LOWERINGS.append((when, table))
        for n in names:
            if n in table:
                raise RuntimeError(f"two lowerings registered for {n}")
            table[n] = fn
        return fn

    return deco


def lowering_of(op: Op) -> Callable | None:
    """The lowering function of `op`: a guarded one whose predicate selects it, else the op's."""
    for when, table in GUARDED_LOWERINGS:
        fn = table.get(op.name)
        if fn is not None and when(op):
            return fn
    return LOWERINGS.get(op.name)


# FLOPs per element of the float ops the simulator's counters report as scalar FLOPs (an fma
# that fuses a mulf counts 1 + 1 through both ops; ops/dot.py counts its FMA paths itself).
SCALAR_FLOPS = {"arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.divf": 1, "tt.precise_divf": 1,
                "math.fma": 2}


class KernelState:
    """What all functions of one kernel share: names, helpers, scratch size."""

    def __init__(self, kernel_name: str, num_warps: int, module):
        self.kernel_name = kernel_name
        self.num_warps = num_warps
        self.module = module
        self.helpers: dict[str, str] = {}
        self.scratch_bytes = 0
        self.functions_emitted: dict[str, str] = {}  # tt.call targets: name -> MSL text
        self.function_sigs: dict[str, dict] = {}
        # ttg.local_alloc results -> the tensor they were initialised from (see layout_conversion).
        self.memdesc_sources: dict[int, Value] = {}
        # Device assert/print sites, in emission order (ops/debug.py); index = site id.
        self.debug_sites: list[dict] = []
        # Whether a 64-bit atomic used the lock table `tmps_locks` (ops/memory.py).
        self.uses_locks = False
        # Triton's enable_fp_fusion: mul+add pairs become fma() (ops/elementwise.py).
        self.fp_fusion = True
        # The kernel config's threadgroup-memory budget (MPSDriver.set_kernel_config(
        # shared_memory=...)); None: Metal's whole 32 KiB (scratch_limit).
        self.scratch_budget: int | None = None
        # The plan's device coherence: every pointer type `TMPS_COHERENT device T*` (coherence.py).
        self.coherent = False
        # Results of arith.mulf folded into the fma of their only user: id -> (a, b).
        self.fused_muls: dict[int, tuple] = {}
        # The public function (driver.lower); its top level runs once per thread.
        self.kernel_func = None
        # No threadgroup memory requested yet (LoweringContext.scratch): no thread can still be
        # reading what an exchange at the kernel's top level would overwrite (scratch_untouched).
        self.scratch_untouched = True


@dataclass(eq=False)
class LoweringContext:
    """Lowering state of one function (the kernel or a noinline callee). Per-function analyses
    are fields here, computed on first use by the op module that needs them."""

    state: KernelState  # what the whole kernel shares
    func: Function  # the function being lowered
    e: Emitter  # where its MSL lines go
    names: dict[int, list[str]] = field(default_factory=dict)  # value id -> MSL expression per register
    prologue: list[str] = field(default_factory=list)  # hoisted lines (thread offsets) before the body
    _offsets: dict[tuple, str] = field(default_factory=dict)  # (lane, warp) bases -> hoisted offset name
    current_op: Op | None = None  # the op being lowered (errors name it)
    return_handler: Callable | None = None  # set by the function emitter: lowers tt.return
    block_stack: list[Block] = field(default_factory=list)  # blocks being lowered (innermost last)
    # Contiguity/divisibility of the function's values (compiler/axis_info.py), for vectorised
    # loads and stores (ops/memory.py); built on first use.
    axis_analysis: AxisAnalysis | None = None
    # tt.dot ops whose accumulator is carried in simdgroup registers across the enclosing
    # scf.for: dot op id -> carried tile record (ops/dot.py, through LOOP_CARRIERS).
    carried_dots: dict[int, dict] = field(default_factory=dict)
    # (variable, MSL type) each tt.map_elementwise.return assigns, innermost map last
    map_results: list[list[tuple[str, str]]] = field(default_factory=list)
    carried: dict[int, list] | None = None  # provenance.py's structured-control-flow map, on first use

    def __post_init__(self):
        self.e.helpers = self.state.helpers

    # ---- errors -------------------------------------------------------------------------------
    def error(self, op: Op | None, msg: str):
        op = op or self.current_op
        raise CompilationError(msg, op=op.name if op else "", kernel=self.state.kernel_name,
                               file=op.file if op else "", line=op.line if op else 0)

    @property
    def num_warps(self) -> int:
        return self.state.num_warps

    # ---- values -------------------------------------------------------------------------------
    def exprs(self, v: Value) -> list[str]:
        got = self.names.get(v.id)
        if got is None:
            self.error(self.current_op, f"value used before it was lowered ({v.type})")
        return got

    def expr(self, v: Value, r: int = 0) -> str:
        got = self.exprs(v)
        return got[0] if len(got) == 1 else got[r]

    def num_regs(self, v: Value) -> int:
        if isinstance(v.type, TensorType):
            return self.layout(v).num_regs
        return 1

    def layout(self, v: Value) -> Layout:
        if not isinstance(v.type, TensorType):
            self.error(self.current_op, f"expected a tensor, got {v.type}")
        if v.layout is None:
            self.error(self.current_op, f"unsupported tensor encoding: {v.type.encoding or 'none'}")
        return v.layout

    def msl_type(self, v_or_type) -> str:
        ty = v_or_type.type if isinstance(v_or_type, Value) else v_or_type
        try:
            t = elem_of(ty)
            return t.msl(coherent=self.state.coherent) if isinstance(t, PointerType) else t.msl()
        except (TypeError, KeyError) as exc:
            self.error(self.current_op, str(exc) or f"type {ty} is not supported")

    def elem(self, v: Value):
        return elem_of(v.type)

    def hint(self, v: Value, default: str) -> str:
        return v.hint or default

    def define(self, v: Value, values, hint: str | None = None) -> list[str]:
        """Emit `T name_r = expr;` for every register of v (values: fn(r)->str, list, or str)."""
        n = self.num_regs(v)
        if isinstance(values, str):
            values = [values] * n
        elif callable(values):
            values = [values(r) for r in range(n)]
        if len(values) != n:
            self.error(self.current_op, f"internal: {len(values)} expressions for {n} registers")
        ty = self.msl_type(v)
        base = self.e.fresh(hint or self.hint(v, "v"))
        if n == 1 and not isinstance(v.type, TensorType):
            self.e.line(f"{ty} {base} = {values[0]};")
            names = [base]
        else:
            names = []
            for r, x in enumerate(values):
                nm = f"{base}_{r}"
                self.e.line(f"{ty} {nm} = {x};")
                names.append(nm)
        self.names[v.id] = names
        return names

    def bind(self, v: Value, exprs) -> None:
        """Make v stand for existing expressions (names or literals): no code emitted."""
        if isinstance(exprs, str):
            exprs = [exprs] * self.num_regs(v)
        self.names[v.id] = list(exprs)

    def declare(self, v: Value, init: list[str] | None = None, hint: str | None = None) -> list[str]:
        """Mutable variables for v (loop-carried values, if/while results)."""
        n = self.num_regs(v)
        ty = self.msl_type(v)
        base = self.e.fresh(hint or self.hint(v, "c"))
        names = [base] if n == 1 and not isinstance(v.type, TensorType) else [f"{base}_{r}" for r in range(n)]
        for r, nm in enumerate(names):
            self.e.line(f"{ty} {nm}" + (f" = {init[r]};" if init is not None else ";"))
        self.names[v.id] = names
        return names

    def assign(self, names: list[str], exprs: list[str], types: list[str] | None = None) -> None:
        """names[i] = exprs[i], as a parallel assignment (temporaries when a source is a target)."""
        pairs = [(d, s) for d, s in zip(names, exprs, strict=True) if d != s]
        targets = {d for d, _ in pairs}
        if any(s in targets for _, s in pairs):
            if types is None:
                self.error(self.current_op, "internal: parallel assignment needs types")
            tmps = []
            pair_types = [t for d0, s0, t in zip(names, exprs, types, strict=True) if d0 != s0]
            for (d, s), t in zip(pairs, pair_types, strict=True):
                tn = self.e.fresh("tmp")
                self.e.line(f"{t} {tn} = {s};")
                tmps.append((d, tn))
            pairs = tmps
        for d, s in pairs:
            self.e.line(f"{d} = {s};")

    # ---- layouts --------------------------------------------------------------------------------
    def thread_offset(self, layout: Layout, d: int) -> str:
        """Name of a per-thread uint: XOR of the lane and warp bases along dim d (hoisted)."""
        lane = tuple(b[d] for b in layout.lane_bases)
        warp = tuple(b[d] for b in layout.warp_bases)
        key = (lane, warp)
        got = self._offsets.get(key)
        if got is not None:
            return got
        terms = _bit_terms("tmps_lane", lane) + _bit_terms("tmps_warp", warp)
        name = f"tmps_off{len(self._offsets)}"
        self.prologue.append(f"uint {name} = {' ^ '.join(terms) if terms else '0u'};")
        self._offsets[key] = name
        return name

    def coord(self, layout: Layout, r: int) -> list[str]:
        out = []
        rc = layout.reg_coord(r)
        for d in range(layout.rank):
            off = self.thread_offset(layout, d)
            if off.endswith("0u") and off == "0u":
                out.append(f"{rc[d]}u")
            else:
                out.append(f"({rc[d]}u ^ {off})" if rc[d] else off)
        return out

    def linear_index(self, layout: Layout, r: int) -> str:
        c = self.coord(layout, r)
        terms = []
        stride = 1
        for d in reversed(range(layout.rank)):
            terms.append(c[d] if stride == 1 else f"{c[d]} * {stride}u")
            stride *= layout.shape[d]
        return " + ".join(reversed(terms)) if terms else "0u"

    def owner_predicate(self, layout: Layout) -> str | None:
        parts = []
        if layout.lane_dup_mask:
            parts.append(f"(tmps_lane & {layout.lane_dup_mask}u) == 0u")
        if layout.warp_dup_mask:
            parts.append(f"(tmps_warp & {layout.warp_dup_mask}u) == 0u")
        if not parts:
            return None
        return " && ".join(parts)

    def register_map(self, src: Layout, dst: Layout, project=None) -> list[int] | None:
        return register_map(src, dst, project)

    # ---- threadgroup memory ---------------------------------------------------------------------
    def scratch(self, nbytes: int, msl_type: str = "uchar") -> str:
        """A `threadgroup T*` expression at the start of the shared scratch array (>= nbytes).
        Over SCRATCH_LIMIT: ThreadgroupMemoryError (also Triton's OutOfResources)."""
        limit = scratch_limit(self)
        if nbytes > limit:
            op = self.current_op
            raise ThreadgroupMemoryError(
                nbytes, limit,
                f"needs {nbytes} bytes of threadgroup memory at once; Metal allows {limit} per "
                f"threadgroup (reduce the block sizes)",
                op=op.name if op else "", kernel=self.state.kernel_name, file=op.file if op else "",
                line=op.line if op else 0)
        self.state.scratch_bytes = max(self.state.scratch_bytes, (nbytes + 15) // 16 * 16)
        self.state.scratch_untouched = False
        return f"((threadgroup {msl_type}*)tmps_smem)"

    def scratch_untouched(self) -> bool:
        """Nothing before this point of the kernel's straight-line top level uses threadgroup
        memory (no earlier exchange, no noinline call, not in a loop or branch): an exchange
        here needs no barrier before its writes."""
        return (self.state.scratch_untouched and not self.state.functions_emitted
                and self.func is self.state.kernel_func and len(self.block_stack) == 1)

    def barrier(self) -> None:
        self.e.line("threadgroup_barrier(mem_flags::mem_threadgroup);")

    # ---- literals -------------------------------------------------------------------------------
    def literal(self, value, ty) -> str:
        ty = elem_of(ty)
        if isinstance(ty, PointerType):
            return f"(({ty.msl(coherent=self.state.coherent)})0)"
        name = ty.name
        if name == "i1":
            return "true" if value else "false"
        if ty.is_int:
            bits = ty.bits
            v = int(value) & ((1 << bits) - 1)
            if v >> (bits - 1):
                v -= 1 << bits
            if bits == 64:
                return f"(long)0x{v & ((1 << 64) - 1):x}ul" if v < 0 else f"{v}l"
            if bits == 32:
                return f"(int)0x{v & 0xffffffff:x}u" if v < 0 else f"{v}"
            return f"({ty.msl()}){v}"
        # floats: exact value of the type, spelled through float bits when not finite
        f = float(value)
        if name == "f64":  # software float64: the binary64 bits (mslib/fp64.py)
            return fp64.literal(f)
        if name in fp8.FORMATS:  # 8-bit storage: the encoded byte (RTNE, saturating, as a cast)
            return f"(uchar)0x{fp8.encode(fp8.FORMATS[name], f):02x}u"
        if name == "f32" or name in ("f16", "bf16"):
            f32 = struct.unpack("<f", struct.pack("<f", f))[0] if math.isfinite(f) and abs(f) < 3.5e38 else f
            if not math.isfinite(f32):
                bits = 0x7FC00000 if math.isnan(f32) else (0x7F800000 if f32 > 0 else 0xFF800000)
                s = f"as_type<float>(0x{bits:08x}u)"
            else:
                s = _float_literal(f32)
            return s if name == "f32" else f"({ty.msl()}){s}"
        self.error(self.current_op, f"float type {name} is not supported by Metal")

    # ---- counters -------------------------------------------------------------------------------
    def count_flops(self, n: int) -> None:
        """Mark n scalar FLOPs done by this thread here (TMPS_FLOPS: the simulator's counters
        see them; empty for Metal)."""
        if n:
            self.e.line(f"TMPS_FLOPS({n});")

    # ---- lowering -------------------------------------------------------------------------------
    def lower_op(self, op: Op) -> None:
        fn = lowering_of(op)
        if fn is None:
            self.error(op, f"operation {op.name} is not supported by the Metal backend")
        prev = self.current_op
        self.current_op = op
        self.e.origin(op.file, op.line)
        try:
            fn(self, op)
            flops = SCALAR_FLOPS.get(op.name)
            if flops and op.results:
                self.count_flops(flops * self.num_regs(op.results[0]))
        except CompilationError:
            raise
        except Exception as exc:  # turn lowering bugs into errors that name the op
            raise CompilationError(f"internal error while lowering: {type(exc).__name__}: {exc}",
                                   op=op.name, kernel=self.state.kernel_name, file=op.file,
                                   line=op.line) from exc
        finally:
            self.current_op = prev

    TERMINATORS = ("scf.yield", "scf.condition", "tt.reduce.return", "tt.scan.return")

    def lower_block(self, block: Block, args: list) -> list[list[str]]:
        """Bind block args (each a str or list of str), lower the ops, return the terminator's
        operand expressions (scf.yield / scf.condition / tt.reduce.return / tt.scan.return);
        other terminators (tt.return) are lowered as ops and yield []."""
        if len(args) != len(block.args):
            self.error(self.current_op, f"internal: block has {len(block.args)} args, got {len(args)}")
        for a, x in zip(block.args, args, strict=True):
            self.bind(a, x)
        self.block_stack.append(block)
        try:
            return self._lower_ops(block)
        finally:
            self.block_stack.pop()

    def _lower_ops(self, block: Block) -> list[list[str]]:
        for op in block.ops:
            if op.name in self.TERMINATORS:
                return [self.exprs(v) for v in op.operands]
            self.lower_op(op)
        return []


def _bit_terms(var: str, values: tuple) -> list[str]:
    """Terms whose XOR is sum over set bits i of `var` of values[i]; runs of doubling values
    become one shifted field: ((var >> i) & mask) * value."""
    terms, i = [], 0
    while i < len(values):
        if values[i] == 0:
            i += 1
            continue
        j = i + 1
        while j < len(values) and values[j] == 2 * values[j - 1]:
            j += 1
        field = f"({var} >> {i}u)" if i else var
        mask = (1 << (j - i)) - 1
        t = f"({field} & {mask}u)"
        terms.append(t if values[i] == 1 else f"{t} * {values[i]}u")
        i = j
    return terms


def _float_literal(f: float) -> str:
    """Shortest decimal that reads back as the same float32."""
    import numpy as np

    if f == 0:
        return "-0.0f" if math.copysign(1.0, f) < 0 else "0.0f"
    x = np.float32(f)
    if 1e-4 <= abs(f) < 1e7:
        s = np.format_float_positional(x, unique=True, trim="0")
    else:
        s = np.format_float_scientific(x, unique=True, trim="0")
    return s + "f"


def function_body(state: KernelState, func: Function, arg_exprs: list[list[str]], *,
                  on_return: Callable[[LoweringContext, Op], None]) -> tuple[list[str], list[str]]:
    """Lower `func`'s body with its arguments bound; returns (prologue lines, body lines).

    `on_return(ctx, op)` emits the function's tt.return."""
    e = Emitter(indent=1)
    ctx = LoweringContext(state, func, e)
    ctx.return_handler = on_return
    ctx.lower_block(func.body, arg_exprs)
    return ctx.prologue, e.lines
