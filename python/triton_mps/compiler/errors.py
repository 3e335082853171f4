"""Errors raised while lowering TTGIR to MSL."""

from __future__ import annotations


class CompilationError(RuntimeError):
    """An op we cannot lower (or lower correctly): names the op, the kernel and the Python line."""

    def __init__(self, message: str, *, op: str = "", kernel: str = "", file: str = "", line: int = 0):
        self.op = op
        self.kernel = kernel
        self.file = file
        self.line = line
        self.reason = message
        where = f"kernel '{kernel}'" if kernel else "kernel"
        if file or line:
            where += f", {file}:{line}"
        if op:
            where += f" (`{op}`)"
        super().__init__(f"{where}: {message}")
