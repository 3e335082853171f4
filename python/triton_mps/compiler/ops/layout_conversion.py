"""ttg.convert_layout, and the shared machinery to move tensor elements between layouts.

`remap` first tries a compile-time register mapping (every element a thread needs is already
in one of its registers); otherwise the elements go through threadgroup memory: owners write
their elements at the row-major index, a barrier, every thread reads what it needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ir import Op, Value
from ..lowering import LoweringContext, lowers


def row_major(shape, coord_exprs: list[str]) -> str:
    """Row-major linear index expression of coordinate expressions (uint)."""
    terms, stride = [], 1
    for d in reversed(range(len(shape))):
        terms.append(coord_exprs[d] if stride == 1 else f"({coord_exprs[d]}) * {stride}u")
        stride *= shape[d]
    return " + ".join(reversed(terms)) if terms else "0u"


def is_pointer(msl_t: str) -> bool:
    return msl_t.endswith("*")


def scratch_type(msl_t: str) -> str:
    """The element type of a threadgroup-memory array holding values of MSL type msl_t:
    pointers are kept as their 64-bit address (`threadgroup device T**` is not a type)."""
    return "ulong" if is_pointer(msl_t) else msl_t


def to_scratch(msl_t: str, expr: str) -> str:
    return f"reinterpret_cast<ulong>({expr})" if is_pointer(msl_t) else expr


def from_scratch(msl_t: str, expr: str) -> str:
    """A value of MSL type msl_t read from an array of scratch_type(msl_t)."""
    return f"reinterpret_cast<{msl_t}>({expr})" if is_pointer(msl_t) else expr


def store_to_scratch(ctx: LoweringContext, src: Value, buf: str, base: int = 0) -> None:
    """Owners of src's elements write them at their row-major index (+ base) in buf (an array
    of scratch_type of src's element type)."""
    lay = ctx.layout(src)
    owner = ctx.owner_predicate(lay)
    e = ctx.e
    ty = ctx.msl_type(src)

    def body():
        for r in lay.owned_regs():
            idx = ctx.linear_index(lay, r)
            e.line(f"{buf}[{idx}{f' + {base}u' if base else ''}] = {to_scratch(ty, ctx.expr(src, r))};")

    with e.guarded(owner):
        body()


def remap(ctx: LoweringContext, src: Value, dst: Value, project: Callable | None,
          src_index: Callable[[list[str]], str], hint: str) -> None:
    """Define dst from src where dst[c] = src[project(c)].

    project: XOR-linear map of dst coordinates (python tuples) to src coordinates, for the
    register path (None: no register path); src_index: MSL row-major src index from the dst
    coordinate expressions (the threadgroup-memory path)."""
    slay, dlay = ctx.layout(src), ctx.layout(dst)
    if project is not None:
        m = ctx.register_map(slay, dlay, project)
        if m is not None:
            ctx.bind(dst, [ctx.expr(src, m[r]) for r in range(dlay.num_regs)])
            return
    ty = ctx.msl_type(src)
    numel = math.prod(slay.shape)
    buf = ctx.scratch(numel * _size(ty), scratch_type(ty))
    ctx.e.comment(f"{hint}: through threadgroup memory")
    ctx.barrier()
    store_to_scratch(ctx, src, buf)
    ctx.barrier()
    ctx.define(dst, lambda r: from_scratch(ty, f"{buf}[{src_index(ctx.coord(dlay, r))}]"), hint=hint)


_SIZES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
          "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}


def _size(msl_t: str) -> int:
    if is_pointer(msl_t):
        return 8
    if msl_t not in _SIZES:
        raise KeyError(f"no threadgroup-memory size for MSL type '{msl_t}'")
    return _SIZES[msl_t]


@lowers("ttg.convert_layout")
def convert_layout(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    shape = ctx.layout(src).shape
    remap(ctx, src, dst, lambda c: c, lambda c: row_major(shape, c), ctx.hint(dst, "cvt"))


# Triton's reduce_data_duplication pass wraps layout changes (e.g. into dot-operand layouts) in
# an immutable shared-memory buffer: `%m = ttg.local_alloc %t` then `%x = ttg.local_load %m`.
# That pair is exactly a layout conversion of %t, which is how it is lowered (register mapping
# when threads already hold the elements, else threadgroup memory). Any other use of the buffer
# (mutable allocs, local_store, subviews) is not supported yet and raises.
@lowers("ttg.local_alloc")
def local_alloc(ctx: LoweringContext, op: Op):
    if not op.operands:
        ctx.error(op, "a mutable shared-memory allocation (ttg.local_alloc without a value) is not supported")
    ctx.state.memdesc_sources[op.results[0].id] = op.operands[0]
    ctx.bind(op.results[0], ["0"])  # no MSL value of its own: loads read the source tensor


@lowers("ttg.local_load")
def local_load(ctx: LoweringContext, op: Op):
    src = ctx.state.memdesc_sources.get(op.operands[0].id)
    if src is None:
        ctx.error(op, "ttg.local_load from a buffer that is not an immutable ttg.local_alloc of a tensor")
    if len(op.operands) > 1:
        ctx.error(op, "ttg.local_load with a token operand is not supported")
    shape = ctx.layout(src).shape
    remap(ctx, src, op.results[0], lambda c: c, lambda c: row_major(shape, c), ctx.hint(op.results[0], "lld"))


@lowers("ttg.local_dealloc")
def local_dealloc(ctx: LoweringContext, op: Op):
    pass  # nothing was allocated: local_alloc only names its source tensor
