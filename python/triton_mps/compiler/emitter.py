"""MSL text building: indentation, unique names, program-scope helpers."""

from __future__ import annotations

from contextlib import contextmanager

from .names import local_name, local_prefix


class Emitter:
    """Collects the lines of one MSL function body, plus program-scope helpers for the file."""

    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.level = indent
        self._counts: dict[str, int] = {}
        self.helpers: dict[str, str] = {}  # key -> text, in first-use order (shared per file)

    def line(self, text: str) -> None:
        self.lines.append("  " * self.level + text)

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
