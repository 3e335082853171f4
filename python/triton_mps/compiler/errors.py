"""Errors raised while lowering TTGIR to MSL."""

from __future__ import annotations

from triton.runtime.errors import OutOfResources


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


class ThreadgroupMemoryError(CompilationError, OutOfResources):
    """An op whose data cannot go through Metal's threadgroup memory even in rounds: a
    CompilationError (names op, kernel, line) and Triton's OutOfResources (autotuners prune the
    config)."""

    def __init__(self, required: int, limit: int, message: str, *, op: str = "", kernel: str = "",
                 file: str = "", line: int = 0):
        CompilationError.__init__(self, message, op=op, kernel=kernel, file=file, line=line)
        self.required = required
        self.limit = limit
        self.name = f"threadgroup memory of kernel '{kernel}'"

    def __str__(self) -> str:
        return RuntimeError.__str__(self)

    def __reduce__(self):
        return (_rebuild_tg_error, (self.required, self.limit, self.reason, self.op, self.kernel, self.file,
                                    self.line))


def _rebuild_tg_error(required, limit, message, op, kernel, file, line):
    return ThreadgroupMemoryError(required, limit, message, op=op, kernel=kernel, file=file, line=line)
