"""Exchanging values between the lanes of a SIMD-group (simd_shuffle*), batched.

Every simd_shuffle* call is one SIMD-group collective: on a GPU one permute per 32-bit register,
in the simulator a round of 32 fiber switches, its largest cost. Reductions and scans exchange
several independent values with the same lane pattern (one per register group, per operand), so
`shuffle_many` packs their bits into 32-bit words and moves up to four words per call (uint2..4:
Metal's simd_shuffle* take scalars and 2- to 4-component vectors of half, float, short, ushort,
int and uint). Only bits move: a value arrives bit for bit (NaN payloads, -0.0 included), so the
results are the ones a call per value gives, and a GPU executes no more permutes than before
(16-bit values share a word, so it may execute fewer).
"""

from __future__ import annotations

from .lowering import LoweringContext

# False: one call per value (the path before batching; tests compare the two bit for bit).
BATCHED = True

# Element types Metal's SIMD-group functions take directly (scalars and 2- to 4-vectors).
SIMD_TYPES = ("float", "half", "int", "uint", "short", "ushort")

_WORD = ("float", "int", "uint")  # one 32-bit word each
_DWORD = ("long", "ulong")  # two words
_HALFWORD = ("half", "bfloat", "short", "ushort", "char", "uchar", "bool")  # 16 bits of a word


def shuffle(ctx: LoweringContext, fn: str, t: str, x: str, arg: str) -> str:
    """simd shuffle of one scalar of MSL type t (types Metal lacks go through supported ones)."""
    a = f"(ushort)({arg})"
    if t in SIMD_TYPES:
        return f"{fn}({x}, {a})"
    if t in ("char", "uchar"):
        return f"({t}){fn}((short){x}, {a})"
    if t == "bool":
        return f"({fn}((ushort){x}, {a}) != 0)"
    if t == "bfloat":
        return f"as_type<bfloat>({fn}(as_type<ushort>({x}), {a}))"
    if t in _DWORD:
        return f"as_type<{t}>({fn}(as_type<uint2>({x}), {a}))"
    ctx.error(None, f"cannot exchange values of type {t} between lanes")


def _to_half_word(t: str, x: str) -> str:
    """The 16 bits (as ushort) that carry a value of a type in _HALFWORD."""
    if t in ("half", "bfloat", "short"):
        return f"as_type<ushort>({x})"
    if t == "ushort":
        return x
    if t == "char":
        return f"(ushort)as_type<uchar>({x})"
    return f"(ushort)({x})"  # uchar, bool (0 or 1)


def _from_half_word(t: str, h: str) -> str:
    if t in ("half", "bfloat", "short"):
        return f"as_type<{t}>((ushort)({h}))"
    if t == "ushort":
        return f"(ushort)({h})"
    if t == "char":
        return f"as_type<char>((uchar)({h}))"
    if t == "bool":
        return f"(({h}) != 0u)"
    return f"(uchar)({h})"


def shuffle_many(ctx: LoweringContext, fn: str, items: list[tuple[str, str]], arg: str,
                 hint: str = "shf") -> list[str]:
    """fn (simd_shuffle_xor, simd_shuffle, ...) of every (MSL type, value) in items with the same
    lane argument: a fresh variable per item holding the value fn gives it, in as few calls as
    Metal allows. One item keeps its plain call (the text a single shuffle always had)."""
    e = ctx.e
    if len(items) == 1 or not BATCHED:
        names = []
        for t, x in items:
            names.append(e.fresh(hint))
            e.line(f"{t} {names[-1]} = {shuffle(ctx, fn, t, x, arg)};")
        return names
    # Lay the items' bits out as words: (word index, half) per item; 64-bit items take two words.
    words: list[str] = []
    halves: list[tuple[int, str]] = []  # (item index, ushort expression) waiting for a word
    where: list[tuple] = [()] * len(items)
    for i, (t, x) in enumerate(items):
        if t in _WORD:
            where[i] = ("w", len(words))
            words.append(x if t == "uint" else f"as_type<uint>({x})")
        elif t in _DWORD:
            pair = e.fresh("wds")
            e.line(f"uint2 {pair} = as_type<uint2>({x});")
            where[i] = ("d", len(words))
            words += [f"{pair}.x", f"{pair}.y"]
        elif t in _HALFWORD:
            halves.append((i, _to_half_word(t, x)))
        else:
            ctx.error(None, f"cannot exchange values of type {t} between lanes")
    for k in range(0, len(halves), 2):
        (i, lo), *rest = halves[k:k + 2]
        where[i] = ("lo", len(words))
        if rest:
            (j, hi), = rest
            where[j] = ("hi", len(words))
            words.append(f"((uint)({lo}) | ((uint)({hi}) << 16u))")
        else:
            words.append(f"(uint)({lo})")
    # Up to four words per call.
    got: list[str] = []
    for k in range(0, len(words), 4):
        chunk = words[k:k + 4]
        name = e.fresh(hint)
        if len(chunk) == 1:
            e.line(f"uint {name} = {fn}({chunk[0]}, (ushort)({arg}));")
            got.append(name)
        else:
            vt = f"uint{len(chunk)}"
            e.line(f"{vt} {name} = {fn}({vt}({', '.join(chunk)}), (ushort)({arg}));")
            got += [f"{name}.{c}" for c in "xyzw"[:len(chunk)]]
    out = []
    for (t, _), (kind, w) in zip(items, where, strict=True):
        if kind == "w":
            expr = got[w] if t == "uint" else f"as_type<{t}>({got[w]})"
        elif kind == "d":
            expr = f"as_type<{t}>(uint2({got[w]}, {got[w + 1]}))"
        elif kind == "lo":
            expr = _from_half_word(t, f"{got[w]} & 0xffffu")
        else:
            expr = _from_half_word(t, f"{got[w]} >> 16u")
        name = e.fresh(hint)
        e.line(f"{t} {name} = {expr};")
        out.append(name)
    return out
