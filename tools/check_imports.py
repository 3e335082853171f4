"""Find import circles among the modules of `python/` (exit status 1 if there is one).

    python tools/check_imports.py [ROOT]      (ROOT defaults to the repository's python/)

Every `import` / `from ... import` of a module under ROOT is an edge, wherever it is written:
at module level, inside a function, or under `if TYPE_CHECKING:`. Function-level imports count
on purpose: they are how a circle is usually hidden (the bottom module asks the top one for
something at call time), and a circle hidden that way still ties the two modules together -
neither can be read, tested or moved without the other. `from pkg import name` is an edge to
`pkg.name` when that is a module, else to `pkg`. A package's `__init__` is its own node:
importing `a.b.c` runs `a/__init__` and `a/b/__init__` too, but those parent edges are left
out (every module would otherwise be in a circle with its package's `__init__`). The native
extension `triton_mps._core` (built from csrc/, no .py file) is a module too: `from . import
_core` is an edge to it, not to the package.

Circles are the strongly connected components of the graph (Tarjan); each is printed with one
cycle through it, so the edges to cut are visible.

It also checks the few layering rules of `FORBIDDEN` (a module that must not import another,
directly): the language layer (`tl.extra.libdevice` and friends, run by Triton's front end)
never imports the TTGIR -> MSL compiler, and the math table both of them read
(`triton_mps.math_functions`) imports nothing of the package.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# Compiled modules (no source to parse; they import nothing of ours).
EXTENSION_MODULES = ("triton_mps._core",)


def modules_under(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import `from <level dots><target> import ...`."""
    if level == 0:
        return target or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules under ROOT that module `name` imports (anywhere in its text)."""
    known = set(known)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # `import a.b.c` of a non-module attribute path
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules_under(root)
    known = [*mods, *EXTENSION_MODULES]
    edges = {name: imports_of(name, path, known) for name, path in mods.items()}
    return {**{m: set() for m in EXTENSION_MODULES}, **edges}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def one_cycle(edges: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first), for the report."""
    members = set(comp)
    start = comp[0]
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


# module (or package) prefix -> the prefixes it must not import ("" : any module of ours)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "triton_mps.language": ("triton_mps.compiler",),
    "triton_mps.math_functions": ("",),
}


def _under(module: str, prefix: str) -> bool:
    return prefix == "" or module == prefix or module.startswith(prefix + ".")


def forbidden(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports (importer, imported) that a rule of FORBIDDEN rules out."""
    return sorted((m, t) for m, targets in edges.items() for t in targets
                  for who, banned in FORBIDDEN.items() if _under(m, who) and any(_under(t, b) for b in banned))


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "python"
    edges = graph(root)
    found = circles(edges)
    for comp in found:
        print(f"import circle of {len(comp)} modules: {', '.join(comp)}")
        print(f"  e.g. {' -> '.join(one_cycle(edges, comp))}")
    if not found:
        print(f"no import circle among {len(edges)} modules under {root}")
    bad = forbidden(edges)
    for m, t in bad:
        print(f"forbidden import: {m} imports {t} (FORBIDDEN)")
    return 1 if found or bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
