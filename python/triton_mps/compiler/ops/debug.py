"""Device assert and print (tt.assert, tt.print) through a host-visible record buffer.

Metal compute kernels have no printf (os_log needs MSL 3.2 on macOS 15) and no way to abort a
dispatch, so a kernel with asserts or prints gets one hidden buffer, `device uint* tmps_dbg`,
bound after every argument (see abi.py). The launcher allocates it per launch, zeroes word 0,
and after the dispatch completed decodes it (`report`): prints are written to stdout, failed
asserts raise DeviceAssertionError naming the kernel, the Python line and the message.
noinline callees receive the buffer as a parameter (ops/control_flow.py), so asserts and prints
work there too; a callee's sites are registered once, however often it is called.

Buffer format (32-bit words): two regions of fixed records, each with its own counter, so
prints can never push an assert out (the count of failing elements is exact however much is
printed). Word 0 counts print records reserved (atomically; records past the capacity are
counted but dropped), word 1 is the print capacity (set per launch: capacity_for); word 2
counts assert records (= failing elements), word 3 is the assert capacity (ASSERT_CAPACITY;
only the first failures are kept, the count stays exact); words 4..7 are reserved. Then the
print records, then (from record word1) the assert records, 8 words each:
    site, pid.x, pid.y, pid.z, operand, element index (row-major; NO_INDEX for scalars),
    value bits low, value bits high
Sites (what each tt.assert / tt.print is: message, file, line, operand types and shapes) live
in the kernel's metadata, not in the buffer. Values: floats as fp32 bits (f16/bf16 widen
exactly), integers sign-extended to 64 bits (printed per the op's isSigned), pointers as
addresses. Unlike CUDA, a failed assert does not stop the kernel: the dispatch runs to the end
and the error is raised after it.
"""

from __future__ import annotations

import sys

import numpy as np

from ..ir import Module, Op
from ..lowering import LoweringContext, lowers
from ..types import PointerType, TensorType, elem_of

CAPACITY = 8192  # print records per launch at least; more when the sites' elements need more
ASSERT_CAPACITY = 1024  # failed-assert records kept per launch (the first names the failure)
MAX_CAPACITY = 1 << 21  # 64 MiB of records
HEADER_WORDS = 8
RECORD_WORDS = 8
NO_INDEX = 0xFFFFFFFF
DEBUG_OPS = ("tt.assert", "tt.print")


class DeviceAssertionError(AssertionError):
    """A device-side assertion (tl.device_assert / `assert` with debug=True) failed."""

    def __init__(self, message: str, *, kernel: str, file: str, line: int, failures: int):
        self.kernel = kernel
        self.file = file
        self.line = line
        self.failures = failures
        super().__init__(message)


def buffer_words(capacity: int = CAPACITY) -> int:
    """Words of a record buffer with `capacity` print records (and the assert region)."""
    return HEADER_WORDS + (capacity + ASSERT_CAPACITY) * RECORD_WORDS


def init_header(words: np.ndarray, capacity: int = CAPACITY) -> None:
    """Zero the counters and set both capacities (the launcher, before each launch)."""
    words[:HEADER_WORDS] = 0
    words[1] = capacity
    words[3] = ASSERT_CAPACITY


def capacity_for(debug: dict, programs: int, threads: int) -> int:
    """Print records one launch can produce when each print runs once per program: every
    element of each tensor operand, every thread for a scalar (prints in loops may need more;
    records past the capacity are counted and reported as dropped). Asserts have their own
    region (ASSERT_CAPACITY)."""
    per_program = 0
    for site in debug["sites"]:
        if site["kind"] != "print":
            continue
        for shape in [op["shape"] for op in site.get("operands", [])] or [[]]:
            per_program += int(np.prod(shape)) if shape else threads
    return int(min(max(CAPACITY, per_program * programs), MAX_CAPACITY))


def module_uses_debug(module: Module) -> bool:
    """Whether any function of the module has a tt.assert or tt.print (decided before lowering,
    since the debug buffer takes a binding)."""
    return module.any_op(lambda op: op.name in DEBUG_OPS)


def metadata(state, binding: int) -> dict:
    return {"binding": binding, "capacity": CAPACITY, "sites": list(state.debug_sites)}


# ---- lowering ----------------------------------------------------------------------------------

PRINTS, ASSERTS = 0, 2  # header word of each region's counter (its capacity follows it)


def _put_helper(ctx: LoweringContext) -> str:
    fn = "tmps_dbg_put"
    ctx.e.helper(fn, f"""inline void {fn}(device uint* d, uint region, uint site, uint3 pid, uint operand, uint idx,
                        ulong bits) {{
  // Reserve a slot in the region (word `region` counts, word `region + 1` is its capacity, both
  // set by the launcher); past the capacity the count still grows: the host reports drops, and
  // the assert count stays exact. Assert records follow the print records.
  uint slot = atomic_fetch_add_explicit((device atomic_uint*)(d + region), 1u, memory_order_relaxed);
  if (slot >= d[region + 1u]) return;
  uint first = region == {PRINTS}u ? 0u : d[{PRINTS + 1}];
  device uint* r = d + {HEADER_WORDS}u + (first + slot) * {RECORD_WORDS}u;
  r[0] = site; r[1] = pid.x; r[2] = pid.y; r[3] = pid.z;
  r[4] = operand; r[5] = idx; r[6] = (uint)bits; r[7] = (uint)(bits >> 32);
}}
""")
    return fn


def _value_kind(ctx: LoweringContext, op: Op, v) -> dict:
    et = elem_of(v.type)
    if isinstance(et, PointerType):
        return {"kind": "ptr", "bits": 64}
    name = getattr(et, "name", str(et))
    if getattr(et, "is_float", False):
        if name not in ("f16", "bf16", "f32", "f64"):
            ctx.error(op, f"printing {name} values is not supported")
        return {"kind": "float", "bits": et.bits}
    if name == "i1":
        return {"kind": "bool", "bits": 1}
    if getattr(et, "is_int", False):
        return {"kind": "int", "bits": et.bits}
    ctx.error(op, f"printing values of type {et} is not supported")


def _bits_expr(kind: dict, x: str) -> str:
    k = kind["kind"]
    if k == "float" and kind["bits"] == 64:  # software float64: already the binary64 bits
        return f"(ulong)({x})"
    if k == "float":
        return f"(ulong)as_type<uint>((float)({x}))"
    if k == "bool":
        return f"(ulong)(({x}) ? 1u : 0u)"
    if k == "ptr":
        return f"(ulong)({x})"
    return f"(ulong)(long)({x})"


def _emit_records(ctx: LoweringContext, site: int, operand: int, v, cond=None, every_thread: bool = False) -> None:
    """One record per element of v this thread owns (per scalar: thread 0, or every thread with
    `every_thread`); `cond(r)` (an MSL bool expression) limits the records to elements where it
    holds."""
    put = _put_helper(ctx)
    e = ctx.e
    kind = _value_kind(ctx, ctx.current_op, v) if cond is None else None
    if isinstance(v.type, TensorType):
        lay = ctx.layout(v)
        owner, regs = ctx.owner_predicate(lay), lay.owned_regs()
    else:
        lay, owner, regs = None, (None if every_thread else "tmps_tid == 0u"), [0]

    def body():
        for r in regs:
            idx = ctx.linear_index(lay, r) if lay is not None else f"{NO_INDEX}u"
            bits = "0ul" if kind is None else _bits_expr(kind, ctx.expr(v, r))
            region = PRINTS if cond is None else ASSERTS
            stmt = f"{put}(tmps_dbg, {region}u, {site}u, tmps_pid, {operand}u, {idx}, {bits});"
            e.line(f"if ({cond(r)}) {stmt}" if cond is not None else stmt)

    with e.guarded(owner):
        body()


def _shape(v) -> list[int]:
    return list(v.type.shape) if isinstance(v.type, TensorType) else []


@lowers("tt.assert")
def device_assert(ctx: LoweringContext, op: Op):
    cond = op.operands[0]
    site = len(ctx.state.debug_sites)
    ctx.state.debug_sites.append({"kind": "assert", "message": op.attrs.get("message", ""), "file": op.file,
                                  "line": op.line, "shape": _shape(cond)})
    _emit_records(ctx, site, 0, cond, cond=lambda r: f"!({ctx.expr(cond, r)})")


@lowers("tt.print")
def device_print(ctx: LoweringContext, op: Op):
    hex_ = bool(op.attrs.get("hex"))
    signed = op.attrs.get("isSigned") or []
    operands = []
    for i, v in enumerate(op.operands):
        k = _value_kind(ctx, op, v)
        k["signed"] = bool(signed[i]) if i < len(signed) else True
        k["shape"] = _shape(v)
        operands.append(k)
    site = len(ctx.state.debug_sites)
    ctx.state.debug_sites.append({"kind": "print", "prefix": op.attrs.get("prefix", ""), "hex": hex_, "file": op.file,
                                  "line": op.line, "operands": operands})
    # As on Triton's GPU backends, a scalar (or no operand) prints once per thread of the program.
    if not op.operands:
        put = _put_helper(ctx)
        ctx.e.line(f"{put}(tmps_dbg, {PRINTS}u, {site}u, tmps_pid, {NO_INDEX}u, {NO_INDEX}u, 0ul);")
        return
    for i, v in enumerate(op.operands):
        _emit_records(ctx, site, i, v, every_thread=True)


# ---- host side: decoding after the dispatch ----------------------------------------------------

def _hex_float(x: float) -> str:
    """C's %a: Python's float.hex() without the mantissa's trailing zeros ("0x1.8p+1")."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    mant, exp = float(x).hex().split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


def _value_text(operand: dict, lo: int, hi: int, hex_: bool) -> str:
    """One value as Triton's device_print formats it: %f for floats (%a with hex=True), %d or
    %u for integers (%0Nx with hex=True), %p-like 0x... for pointers."""
    bits64 = lo | (hi << 32)
    k = operand["kind"]
    if k == "float":
        if operand.get("bits") == 64:
            v = float(np.array([bits64], dtype=np.uint64).view(np.float64)[0])
        else:
            v = float(np.array([lo], dtype=np.uint32).view(np.float32)[0])
        return _hex_float(v) if hex_ else f"{v:f}"
    if k == "ptr":
        return f"0x{bits64:x}"
    if k == "bool":
        return str(lo & 1)
    nbits = operand["bits"]
    u = bits64 & ((1 << nbits) - 1)
    if hex_:
        return f"0x{u:0{max(nbits // 4, 1)}x}"
    if operand.get("signed", True) and u >> (nbits - 1):
        u -= 1 << nbits
    return str(u)


def _index_text(idx: tuple[int, ...], shape: list[int]) -> str:
    """Each index right-aligned to the width of its dimension's largest index, as Triton does
    ("idx (  7)" in a 128-element tensor)."""
    return ", ".join(f"{i:{len(str(max(d - 1, 0)))}}" for i, d in zip(idx, shape, strict=True))


def _unravel(index: int, shape: list[int]) -> tuple[int, ...]:
    if index == NO_INDEX or not shape:
        return ()
    return tuple(int(i) for i in np.unravel_index(index, shape))


def _records(words: np.ndarray, first: int, kept: int) -> list[tuple]:
    recs = words[HEADER_WORDS + first * RECORD_WORDS:HEADER_WORDS + (first + kept) * RECORD_WORDS]
    return [(int(r[0]), (int(r[1]), int(r[2]), int(r[3])), int(r[4]), int(r[5]), int(r[6]), int(r[7]))
            for r in recs.reshape(kept, RECORD_WORDS)]


def decode(words: np.ndarray) -> tuple[list[tuple], int, list[tuple], int]:
    """The records of a debug buffer: (prints, prints dropped, asserts kept, failing elements).
    Each list is sorted by (program, site, operand, element). A record: (site, pid, operand,
    index, lo, hi)."""
    words = np.asarray(words).view(np.uint32)
    order = lambda t: (t[1][2], t[1][1], t[1][0], t[0], t[2], t[3])  # noqa: E731
    capacity = int(words[PRINTS + 1])
    printed = int(words[PRINTS])
    failures = int(words[ASSERTS])
    kept = min(printed, capacity)
    prints = sorted(_records(words, 0, kept), key=order)
    asserts = sorted(_records(words, capacity, min(failures, int(words[ASSERTS + 1]))), key=order)
    return prints, printed - kept, asserts, failures


def report(words: np.ndarray, debug: dict, kernel: str, out=None) -> None:
    """Print the kernel's device prints; raise DeviceAssertionError if an assert failed."""
    out = out or sys.stdout
    sites = debug["sites"]
    prints, dropped, asserts, failures = decode(words)
    for record in prints + asserts:
        if record[0] >= len(sites):
            raise RuntimeError(f"kernel '{kernel}': corrupt debug buffer (site {record[0]} of {len(sites)})")
    for site_id, pid, operand, index, lo, hi in prints:
        site = sites[site_id]
        pid_text = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
        prefix = site["prefix"].strip()
        if operand == NO_INDEX:
            print(f"{pid_text} {prefix}".rstrip(), file=out)
            continue
        od = site["operands"][operand]
        idx = _unravel(index, od["shape"])
        # Triton's line: "pid (x, y, z) idx (i, j)" + the prefix as the front end normalised it
        # (" x: ", or ": " when empty) + "(operand n) " with several operands + the value.
        which = f"(operand {operand}) " if len(site["operands"]) > 1 else ""
        idx_text = _index_text(idx, od["shape"]) if idx else ""
        print(f"{pid_text} idx ({idx_text}){site['prefix']}{which}{_value_text(od, lo, hi, site['hex'])}", file=out)
    if dropped:
        print(f"triton-mps: kernel '{kernel}': {dropped} device print records dropped "
              f"(more than {int(np.asarray(words).view(np.uint32)[PRINTS + 1])} in one launch)", file=sys.stderr)
    if failures and not asserts:  # a buffer without an assert region (capacity 0)
        raise DeviceAssertionError(f"kernel '{kernel}': device assertion failed ({failures} failing elements)",
                                   kernel=kernel, file="", line=0, failures=failures)
    if failures:
        site_id, pid, _, index, _, _ = asserts[0]
        site = sites[site_id]
        idx = _unravel(index, site["shape"])
        where = f"{site['file']}:{site['line']}" if site["file"] else f"line {site['line']}"
        msg = site["message"] or "assertion failed"
        elem = f", element ({', '.join(map(str, idx))})" if idx else ""
        n = failures
        raise DeviceAssertionError(
            f"kernel '{kernel}', {where}: device assertion failed: {msg} "
            f"(program ({pid[0]}, {pid[1]}, {pid[2]}){elem}; {n} failing element{'s' if n != 1 else ''})",
            kernel=kernel, file=site["file"], line=site["line"], failures=n)


@lowers("llvm.intr.assume")
def assume(ctx: LoweringContext, op: Op):
    """tl.assume(cond): a promise to the optimizer, not a check. Metal has no assume intrinsic
    that MSL exposes; the promise is dropped (the emitted code is correct without it)."""
    ctx.e.comment(f"assume ({op.file}:{op.line}): dropped")
