"""MSL text building: indentation, unique names, program-scope helpers."""

from __future__ import annotations

import os
from contextlib import contextmanager

from .names import local_name, local_prefix


class Emitter:
    """Collects the lines of one MSL function body, plus program-scope helpers for the file."""

    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.level = indent
        self._counts: dict[str, int] = {}
        self.helpers: dict[str, str] = {}  # key -> text, in first-use order (shared per file)
        self._origin: str | None = None  # Triton source line of the code being emitted
        self._origin_written: str | None = None

    def line(self, text: str) -> None:
        if self._origin != self._origin_written:
            # Before the first line of code from a new Triton source line: the simulator's
            # diagnostics read it back ("at line 46 (kernel.py:12)").
            self._origin_written = self._origin
            if self._origin:
                self.lines.append("  " * self.level + "// @ " + self._origin)
        self.lines.append("  " * self.level + text)

    def origin(self, file: str, line: int) -> None:
        """Code emitted from now on comes from Triton source `file`:`line` (written as a
        `// @ name.py:12` comment before the next line of code; the base name keeps the MSL,
        and so the kernel caches, the same in every checkout)."""
        if line:
            self._origin = f"{os.path.basename(file) or '<unknown>'}:{line}"

    def comment(self, text: str) -> None:
        self.line("// " + text.replace("\n", " "))

    @contextmanager
    def block(self, header: str, footer: str = "}"):
        """`header {` ... `}`; the body is indented."""
        self.line(header + " {")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line(footer)

    @contextmanager
    def indented(self):
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    def fresh(self, prefix: str) -> str:
        """A new identifier `<prefix><n>`, unique within this emitter and legal MSL whatever the
        prefix (a Triton variable name): see names.local_prefix / local_name."""
        p = local_prefix(prefix)
        n = self._counts.get(p, 0)
        self._counts[p] = n + 1
        return local_name(p, n)

    @contextmanager
    def guarded(self, cond: str | None):
        """The body inside `if (cond) { ... }`, or unguarded when cond is None or empty."""
        if cond:
            with self.block(f"if ({cond})"):
                yield
        else:
            yield

    def helper(self, key: str, text: str) -> str:
        """Register a program-scope helper once (functions, tables); returns key."""
        if key not in self.helpers:
            self.helpers[key] = text
        return key

    def text(self) -> str:
        return "\n".join(self.lines)
