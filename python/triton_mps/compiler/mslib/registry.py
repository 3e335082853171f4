"""The one registry of MSL helper entries: name -> (the entries it calls, its MSL text).

An entry is a block of program-scope MSL (functions, `constant` tables, the guarded macros of
macros.py) emitted once per kernel file, after the entries it depends on (`use`). What an entry
defines is read from its text (every `tmps_*` function or table declared at column 0, every
`TMPS_*` macro it #defines), so `call(ctx, fn, ...)` finds the entry of any function without a
hand-written map. The family modules register their entries when the package is imported
(`mslib/__init__.py` imports them all), so the library is complete whatever imports it first;
the order of the emitted text is the order of first use, not of registration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    name: str  # also the key of the emitted helper (compiler/driver.py looks for "tmps_f64" keys)
    deps: tuple[str, ...]  # entries emitted before this one, in this order
    text: str
    defines: frozenset[str]


LIB: dict[str, Entry] = {}
_DEFINER: dict[str, str] = {}  # function or table name -> the entry whose text defines it

# `static inline ulong tmps_f64_add(`, `inline float tmps_erf(`, `constant ulong tmps_f64_2opi[21]`
_DEFINITION = re.compile(r"^(?:static\s+)?(?:inline\s+)?(?:constant\s+)?\w+\s+(tmps_\w+)\s*[(\[]", re.M)
_MACRO = re.compile(r"^#define\s+(TMPS_\w+)", re.M)  # the guarded macros (macros.py)
_CALL = re.compile(r"\b(tmps_\w+)\(")


def entry(name: str, deps: tuple[str, ...], text: str) -> None:
    """Register library entry `name` (an error if a name or a definition is taken)."""
    if name in LIB:
        raise ValueError(f"two MSL library entries named {name}")
    defines = frozenset(_DEFINITION.findall(text)) | frozenset(_MACRO.findall(text))
    for fn in defines:
        if fn in _DEFINER:
            raise ValueError(f"{fn} is defined by both {_DEFINER[fn]} and {name}")
    _DEFINER.update(dict.fromkeys(defines, name))
    LIB[name] = Entry(name, tuple(deps), text, defines)


def definer(fn: str) -> str:
    """The entry whose text defines MSL function (or table) `fn`."""
    try:
        return _DEFINER[fn]
    except KeyError:
        raise KeyError(f"no MSL library entry defines {fn}") from None


def use(ctx: Any, name: str) -> None:
    """Emit library entry `name` after the entries it depends on (once per kernel)."""
    use_in(ctx.e.helpers, name)


def use_in(helpers: dict[str, str], name: str) -> None:
    """`use` on a kernel's helpers (KernelState.helpers) where no lowering context is at hand
    (the driver, before the lowering pass)."""
    if name in helpers:
        return
    e = LIB[name]
    for d in e.deps:
        use_in(helpers, d)
    helpers[name] = e.text


def call(ctx: Any, fn: str, *args: str) -> str:
    """`fn(args)`, emitting the entry that defines `fn` (and what it calls) on first use."""
    use(ctx, definer(fn))
    return f"{fn}({', '.join(args)})"


def use_called(ctx: Any, template: str) -> None:
    """Emit the entries defining the library functions an MSL expression `template` calls
    (names it calls that no entry defines, such as Metal's own, are left alone)."""
    for fn in _CALL.findall(template):
        if fn in _DEFINER:
            use(ctx, _DEFINER[fn])


def check() -> None:
    """Every dependency names an entry (run once the families are imported)."""
    for e in LIB.values():
        missing = [d for d in e.deps if d not in LIB]
        if missing:
            raise ValueError(f"MSL library entry {e.name} depends on unknown {missing}")
