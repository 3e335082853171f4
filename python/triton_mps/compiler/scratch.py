"""Threadgroup scratch: moving tensor elements between layouts through threadgroup memory.

The toolkit of the lowerings that exchange elements between threads (layout conversions,
reductions and scans, shape ops, dot operand staging). `remap` first tries a compile-time
register mapping (every element a thread needs is already in one of its registers);
otherwise the elements go through threadgroup memory: owners write their elements at the
row-major index, a barrier, every thread reads what it needs; in rounds
(`windows`) when the tensor is larger than threadgroup memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .ir import Value
from .lowering import LoweringContext, scratch_limit
from .types import MSL_BYTES


def row_major(shape, coord_exprs: list[str]) -> str:
    """Row-major linear index expression of coordinate expressions (uint)."""
    terms, stride = [], 1
    for d in reversed(range(len(shape))):
        terms.append(coord_exprs[d] if stride == 1 else f"({coord_exprs[d]}) * {stride}u")
        stride *= shape[d]
    return " + ".join(reversed(terms)) if terms else "0u"


def is_pointer(msl_t: str) -> bool:
    return msl_t.endswith("*")


# Element types whose runs of registers move as one vector access: a threadgroup access is an
# instruction on Metal and a memcheck call in the simulator. A vector is at most 16 bytes, the
# alignment the scratch array (`threadgroup uint4 tmps_smem_words[]`, driver.assemble) declares;
# arrays packed into the scratch start at multiples of 16 bytes (SCRATCH_ALIGN). Runs of more
# than 4 elements of 1- or 2-byte types move packed in uint2/uint4 words (as_type per word).
_VECTOR_ELEMENTS = ("char", "uchar", "short", "ushort", "int", "uint", "half", "bfloat", "float")
_VECTOR_BYTES = 16
SCRATCH_ALIGN = 16


def _widths(msl_t: str) -> list[int]:
    """Run widths for msl_t, widest first: up to 16 bytes, 2 elements at least."""
    if msl_t not in _VECTOR_ELEMENTS:
        return []
    return [v for v in (16, 8, 4, 2) if v * MSL_BYTES[msl_t] <= _VECTOR_BYTES]


def vector_width(msl_t: str, count: int) -> int:
    """The widest run width of msl_t that divides count (1: none)."""
    return next((v for v in _widths(msl_t) if count % v == 0), 1)


def vector_runs(static: list[int | None], thread_mask: int | None, regs: list[int], msl_t: str) -> dict[int, int]:
    """First register -> width of the runs of registers in regs whose scratch indices are
    consecutive and start at a multiple of the width: index(r0 + k) = index(r0) + k when the
    compile-time parts static[r0 + k] = static[r0] + k (static[r0] a multiple of the width) and
    the thread's part sets no bit below the width (thread_mask), as the index is their XOR."""
    if thread_mask is None:
        return {}
    runs: dict[int, int] = {}
    taken: set[int] = set()
    present = set(regs)
    for r in regs:
        if r in taken or static[r] is None:
            continue
        for v in _widths(msl_t):
            if thread_mask & (v - 1) or static[r] % v:
                continue
            if all(r + k in present and r + k not in taken and static[r + k] == static[r] + k for k in range(v)):
                runs[r] = v
                taken.update(range(r, r + v))
                break
    return runs


def _packing(msl_t: str, v: int) -> tuple[int, int]:
    """(words, elements per word) of a packed run: v elements in `words` uints."""
    per_word = 4 // MSL_BYTES[msl_t]
    return v // per_word, per_word


def _at(buf: str, vt: str, index: str) -> str:
    return f"*(threadgroup {vt}*)({buf} + ({index}))"


def write_vector(buf: str, msl_t: str, index: str, vals: list[str]) -> str:
    """The statement writing vals (a run) at element `index` of scratch array buf."""
    v = len(vals)
    if v <= 4:
        return f"{_at(buf, f'{msl_t}{v}', index)} = {msl_t}{v}({', '.join(vals)});"
    words, per = _packing(msl_t, v)
    parts = [f"as_type<uint>({msl_t}{per}({', '.join(vals[w * per:(w + 1) * per])}))" for w in range(words)]
    return f"{_at(buf, f'uint{words}', index)} = uint{words}({', '.join(parts)});"


def read_vector(ctx: LoweringContext, buf: str, msl_t: str, v: int, index: str) -> list[str]:
    """Emit the read of a run of v elements at element `index` of buf; its elements' expressions."""
    e = ctx.e
    vec = e.fresh("vrd")
    if v <= 4:
        e.line(f"{msl_t}{v} {vec} = {_at(buf, f'{msl_t}{v}', index)};")
        return [f"{vec}.{'xyzw'[i]}" for i in range(v)]
    words, per = _packing(msl_t, v)
    e.line(f"uint{words} {vec} = {_at(buf, f'uint{words}', index)};")
    out = []
    for w in range(words):
        part = e.fresh("vrp")
        e.line(f"{msl_t}{per} {part} = as_type<{msl_t}{per}>({vec}.{'xyzw'[w]});")
        out += [f"{part}.{'xyzw'[i]}" for i in range(per)]
    return out


def write_registers(ctx: LoweringContext, buf: str, msl_t: str, regs: list[int], static: list[int | None],
                    thread_mask: int | None, index: Callable[[int], str], value: Callable[[int], str]) -> None:
    """buf[index(r)] = value(r) for every register r in regs; the runs vector_runs finds (from
    the indices' compile-time parts and thread mask) as one vector write each."""
    runs = vector_runs(static, thread_mask, regs, msl_t)
    in_run = {r0 + k for r0, v in runs.items() for k in range(1, v)}
    for r in regs:
        if r in runs:
            ctx.e.line(write_vector(buf, msl_t, index(r), [value(r + k) for k in range(runs[r])]))
        elif r not in in_run:
            ctx.e.line(f"{buf}[{index(r)}] = {value(r)};")


def read_registers(ctx: LoweringContext, buf: str, msl_t: str, regs: list[int], static: list[int | None],
                   thread_mask: int | None, index: Callable[[int], str]) -> dict[int, str]:
    """Register -> expression of buf[index(r)] for every r in regs; the runs vector_runs finds
    are read as one vector each (emitted here), the others stay plain element reads."""
    out = {r: f"{buf}[{index(r)}]" for r in regs}
    for r0, v in vector_runs(static, thread_mask, regs, msl_t).items():
        out.update({r0 + k: x for k, x in enumerate(read_vector(ctx, buf, msl_t, v, index(r0)))})
    return out


def layout_parts(lay) -> tuple[list[int | None], int | None]:
    """Per register, the compile-time part of its row-major index in lay's shape, and the bits
    the lane/warp part can set (None: not XOR-linear, shapes not powers of two)."""
    return ([static_index(lay.shape, lay.reg_coord(r)) for r in range(lay.num_regs)],
            thread_index_mask(lay.shape, lay.lane_bases + lay.warp_bases))


def scratch_type(msl_t: str) -> str:
    """The element type of a threadgroup-memory array holding values of MSL type msl_t:
    pointers are kept as their 64-bit address (`threadgroup device T**` is not a type)."""
    return "ulong" if is_pointer(msl_t) else msl_t


def to_scratch(msl_t: str, expr: str) -> str:
    return f"reinterpret_cast<ulong>({expr})" if is_pointer(msl_t) else expr


def from_scratch(msl_t: str, expr: str) -> str:
    """A value of MSL type msl_t read from an array of scratch_type(msl_t)."""
    return f"reinterpret_cast<{msl_t}>({expr})" if is_pointer(msl_t) else expr


# ---- rounds: exchanges larger than threadgroup memory -----------------------------------------
# An exchange writes elements at indices [0, n) of a scratch array and reads them back. When n
# elements do not fit SCRATCH_LIMIT it runs in R rounds (as Triton's NVIDIA backend splits a
# layout conversion into repeats), as a runtime loop `for w in 0..R-1`: round w holds the indices
# [w * size, (w + 1) * size) (size a power of two); writers write and readers read only the
# elements of that window. For power-of-two shapes an element's row-major index is (its
# register's compile-time index) XOR (its thread's part), so its window is (static >> s) XOR
# (thread part >> s): the registers are grouped by their static window and each group is one
# test per round (no test at all when the thread part stays below the window size, the usual
# case for one side of a conversion). Other shapes test each index at run time. The code holds
# each access once, whatever the number of rounds.


def windows(n: int, elem_bytes: int, limit: int) -> tuple[int, int]:
    """(rounds, elements per round) for an exchange of n elements of elem_bytes each within
    `limit` bytes (lowering.scratch_limit): (1, n) when everything fits, else rounds of the
    largest power-of-two size that fits."""
    if n * elem_bytes <= limit:
        return 1, n
    size = 1 << ((limit // elem_bytes).bit_length() - 1)
    return -(-n // size), size


def _pow2(shape) -> bool:
    return all(s > 0 and s & (s - 1) == 0 for s in shape)


def static_index(shape, coord) -> int | None:
    """Row-major index of a compile-time coordinate; None unless every dim is a power of two
    (then the index of a XOR of coordinates is the XOR of their indices)."""
    if not _pow2(shape):
        return None
    lin = 0
    for s, x in zip(shape, coord, strict=True):
        lin = lin * s + x
    return lin


def thread_index_mask(shape, bases) -> int | None:
    """Bits the lane/warp part can set in the row-major index (None: not XOR-linear)."""
    if not _pow2(shape):
        return None
    m = 0
    for b in bases:
        m |= static_index(shape, b)
    return m


@dataclass
class Access:
    """One side of a windowed exchange: per register, its index expression and compile-time
    index (None: unknown); thread_index: the index expression of a register whose compile-time
    part is 0 (the thread's own part), with thread_mask the bits it can set (None: unknown)."""
    index: list[str]
    static: list[int | None]
    thread_index: str | None
    thread_mask: int | None


def windowed(ctx: LoweringContext, w: str, size: int, acc: Access, regs: list[int],
              stmt: Callable[[int, str], str]) -> None:
    """Inside the rounds loop (round variable w): stmt(r, index in the window) for every register
    r in regs whose element is in round w's window."""
    e = ctx.e
    s = size.bit_length() - 1
    known = acc.thread_mask is not None and all(acc.static[r] is not None for r in regs)
    if not known:
        for r in regs:
            ix = e.fresh("wix")
            e.line(f"uint {ix} = ({acc.index[r]}) - {w} * {size}u;")  # below the window: wraps
            with e.block(f"if ({ix} < {size}u)"):
                e.line(stmt(r, ix))  # stmt may emit lines of its own first: inside the test
        return
    tw = "0u"
    if acc.thread_mask >> s:
        tw = e.fresh("tw")
        e.line(f"uint {tw} = ({acc.thread_index}) >> {s}u;")
    groups: dict[int, list[int]] = {}
    for r in regs:
        groups.setdefault(acc.static[r] >> s, []).append(r)
    for g, rs in groups.items():
        cond = f"{w} == {g}u" if tw == "0u" else (f"{tw} == {w}" if g == 0 else f"({tw} ^ {g}u) == {w}")
        with e.block(f"if ({cond})"):
            for r in rs:
                e.line(stmt(r, f"({acc.index[r]}) - {w} * {size}u"))


def write_access(ctx: LoweringContext, src: Value, base: int) -> Access:
    lay = ctx.layout(src)
    sfx = f" + {base}u" if base else ""
    static, mask = layout_parts(lay)
    return Access([ctx.linear_index(lay, r) + sfx for r in range(lay.num_regs)],
                  [None if x is None else x + base for x in static],  # base: bits above the tensor's
                  ctx.linear_index(lay, 0), mask)


def store_to_scratch(ctx: LoweringContext, src: Value, buf: str, base: int = 0) -> None:
    """Owners of src's elements write them at their row-major index (+ base) in buf (an array
    of scratch_type of src's element type)."""
    lay = ctx.layout(src)
    owner = ctx.owner_predicate(lay)
    e = ctx.e
    ty = ctx.msl_type(src)

    acc = write_access(ctx, src, base)
    with e.guarded(owner):  # (runs only of vector element types: to_scratch is the value then)
        write_registers(ctx, buf, ty, lay.owned_regs(), acc.static, acc.thread_mask, lambda r: acc.index[r],
                        lambda r: to_scratch(ty, ctx.expr(src, r)))


def through_scratch(ctx: LoweringContext, sources: list[tuple[Value, int]], n: int, dst: Value,
                    read_index: Callable[[int, list[str]], str], hint: str,
                    read_static: Callable[[int], int | None] | None = None, read_mask: int | None = None) -> None:
    """Define dst by reading element read_index(r, dst coords of register r) of n elements that
    the sources' owners write at (their row-major index + base), in rounds when n elements do not
    fit threadgroup memory. read_static(r) / read_mask: the compile-time part of register r's
    index and the bits its thread part can set (None: not known, tested at run time)."""
    dlay = ctx.layout(dst)
    ty = ctx.msl_type(dst)
    st = scratch_type(ty)
    rounds, size = windows(n, scratch_bytes(ty), scratch_limit(ctx))
    untouched = ctx.scratch_untouched()
    buf = ctx.scratch(size * scratch_bytes(ty), st)
    e = ctx.e
    if rounds == 1:
        e.comment(f"{hint}: through threadgroup memory")
        if not untouched:  # other threads may still be reading an earlier exchange
            ctx.barrier()
        for s, base in sources:
            store_to_scratch(ctx, s, buf, base)
        ctx.barrier()
        nr = dlay.num_regs
        statics = [read_static(r) for r in range(nr)] if read_static else [None] * nr
        reads = read_registers(ctx, buf, ty, list(range(nr)), statics, read_mask,
                               lambda r: read_index(r, ctx.coord(dlay, r)))
        ctx.define(dst, lambda r: from_scratch(ty, reads[r]), hint=hint)
        return
    e.comment(f"{hint}: through threadgroup memory in {rounds} rounds of {size} elements")
    writes = [(s, write_access(ctx, s, base), [to_scratch(ty, x) for x in ctx.exprs(s)]) for s, base in sources]
    nr = dlay.num_regs
    statics = [read_static(r) if read_static else None for r in range(nr)]
    reads = Access([read_index(r, ctx.coord(dlay, r)) for r in range(nr)], statics,
                   read_index(0, ctx.coord(dlay, 0)) if statics[0] == 0 else None,
                   read_mask if statics[0] == 0 else None)
    names = ctx.declare(dst, hint=hint)  # after reading the sources' names: dst may be a source
    w = e.fresh("rnd")
    with e.block(f"for (uint {w} = 0u; {w} < {rounds}u; ++{w})"):
        ctx.barrier()
        for s, acc, vals in writes:
            lay = ctx.layout(s)
            with e.guarded(ctx.owner_predicate(lay)):
                windowed(ctx, w, size, acc, lay.owned_regs(),
                          lambda r, i, vals=vals: f"{buf}[{i}] = {vals[r] if len(vals) > 1 else vals[0]};")
        ctx.barrier()
        windowed(ctx, w, size, reads, list(range(nr)),
                  lambda r, i: f"{names[r]} = {from_scratch(ty, f'{buf}[{i}]')};")


def remap(ctx: LoweringContext, src: Value, dst: Value, project: Callable | None,
          src_index: Callable[[list[str]], str], hint: str) -> None:
    """Define dst from src where dst[c] = src[project(c)].

    project: XOR-linear map of dst coordinates (python tuples) to src coordinates, for the
    register path (None: no register path); src_index: MSL row-major src index from the dst
    coordinate expressions (the threadgroup-memory path; equal to the row-major index of
    project(c) when project is given)."""
    slay, dlay = ctx.layout(src), ctx.layout(dst)
    if project is not None:
        m = ctx.register_map(slay, dlay, project)
        if m is not None:
            ctx.bind(dst, [ctx.expr(src, m[r]) for r in range(dlay.num_regs)])
            return
    read_static, read_mask = None, None
    if project is not None:
        read_static = lambda r: static_index(slay.shape, project(dlay.reg_coord(r)))  # noqa: E731
        read_mask = thread_index_mask(slay.shape, [project(b) for b in dlay.lane_bases + dlay.warp_bases])
    through_scratch(ctx, [(src, 0)], math.prod(slay.shape), dst, lambda r, c: src_index(c), hint,
                    read_static, read_mask)


def scratch_bytes(msl_t: str) -> int:
    """Bytes of one element of a scratch array of scratch_type(msl_t)."""
    if is_pointer(msl_t):
        return 8
    if msl_t not in MSL_BYTES:
        raise KeyError(f"no threadgroup-memory size for MSL type '{msl_t}'")
    return MSL_BYTES[msl_t]
