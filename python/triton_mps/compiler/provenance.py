"""Which kernel parameter a pointer derives from (memcheck's provenance).

A load or store lowered from `x_ptr + offs` writes `// @buffer argN` before its accesses and
`// @buffer -` after them (ops/memory.py). The simulator reads the marks with the kernel's
source lines (csrc/sim/memcheck.cpp, SourceOrigins), so an out-of-bounds access is described
against the buffer the kernel meant, not whichever bound buffer lies nearest the stray address
(host addresses differ from run to run). The analysis is static and exact or silent: a pointer
that may come from two parameters, or through an op it does not follow, gets no mark and the
report falls back to the nearest buffer.
"""

from __future__ import annotations

from .ir import Block, Function, Op, Value

# Ops whose pointer result derives from these operands (by position).
_THROUGH: dict[str, tuple[int, ...]] = {
    "tt.addptr": (0,), "tt.splat": (0,), "tt.broadcast": (0,), "tt.expand_dims": (0,),
    "tt.reshape": (0,), "tt.trans": (0,), "tt.bitcast": (0,), "ttg.convert_layout": (0,),
    "arith.select": (1, 2), "tt.join": (0, 1),
}


def _terminator(block: Block) -> Op | None:
    return block.ops[-1] if block.ops else None


def carried_values(func: Function) -> dict[int, list[Value]]:
    """Value id -> the values it takes, for the block arguments and results of structured
    control flow (scf.for iteration arguments, scf.if and scf.while results and arguments)."""
    sources: dict[int, list[Value]] = {}

    def add(v: Value, *srcs: Value | None) -> None:
        sources.setdefault(v.id, []).extend(s for s in srcs if s is not None)

    def visit(block: Block) -> None:
        for op in block.ops:
            if op.name == "scf.for" and op.regions:
                body = op.regions[0].blocks[0]
                yields = _terminator(body)
                inits = op.operands[3:]
                for i, res in enumerate(op.results):
                    y = yields.operands[i] if yields and i < len(yields.operands) else None
                    init = inits[i] if i < len(inits) else None
                    add(res, init, y)
                    if i + 1 < len(body.args):
                        add(body.args[i + 1], init, y)
            elif op.name == "scf.if":
                for region in op.regions:
                    y = _terminator(region.blocks[0]) if region.blocks else None
                    for i, res in enumerate(op.results):
                        add(res, y.operands[i] if y and i < len(y.operands) else None)
            elif op.name == "scf.while" and len(op.regions) == 2:
                before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
                cond, yields = _terminator(before), _terminator(after)
                for i, arg in enumerate(before.args):
                    add(arg, op.operands[i] if i < len(op.operands) else None,
                        yields.operands[i] if yields and i < len(yields.operands) else None)
                passed = cond.operands[1:] if cond else []
                for i, arg in enumerate(after.args):
                    add(arg, passed[i] if i < len(passed) else None)
                for i, res in enumerate(op.results):
                    add(res, passed[i] if i < len(passed) else None)
            for region in op.regions:
                for b in region.blocks:
                    visit(b)

    for block in func.blocks:
        visit(block)
    return sources


def parameter_of(func: Function, carried: dict[int, list[Value]], v: Value) -> str | None:
    """The MSL name (`argN`) of the kernel parameter pointer `v` derives from, or None when it
    is not one parameter (or `func` is not the kernel: a callee's parameters are its own)."""
    if not func.public:
        return None
    params = {a.id: f"arg{i}" for i, a in enumerate(func.args)}
    found: set[str] = set()
    seen: set[int] = set()
    stack = [v]
    while stack:
        x = stack.pop()
        if x.id in seen:
            continue
        seen.add(x.id)
        if x.id in params:
            found.add(params[x.id])
        elif x.id in carried:
            stack.extend(carried[x.id])
        elif x.owner is not None and x.owner.name in _THROUGH:
            stack.extend(x.owner.operands[i] for i in _THROUGH[x.owner.name] if i < len(x.owner.operands))
        else:
            return None  # from an op not followed (a load of a pointer, int_to_ptr, a call, ...)
        if len(found) > 1:
            return None
    return found.pop() if found else None
