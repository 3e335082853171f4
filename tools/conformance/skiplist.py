"""The skip list: `pattern | reason` per line (a pattern on the pytest node id relative to the
upstream folder, e.g. `python/test/unit/language/test_core.py::test_x[*-True]`: `*` and `?`
are wildcards, brackets are literal, as in pytest's parametrized ids). `#` starts a comment
line. Every entry must give a reason; only tests that need CUDA itself, inspect NVIDIA-specific
output, or that the pinned Triton's frontend rejects belong here."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path


@dataclass(frozen=True)
class Skip:
    pattern: str
    reason: str
    line: int


class SkipList:
    def __init__(self, entries: list[Skip]):
        self.entries = entries

    def reason_for(self, node_id: str) -> str | None:
        for e in self.entries:
            if fnmatchcase(node_id, e.pattern.replace("[", "[[]")):
                return e.reason
        return None


def load_skips(path: Path) -> SkipList:
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, sep, reason = line.partition("|")
        if not sep or not reason.strip() or not pattern.strip():
            raise ValueError(f"{path}:{n}: skip entry without a reason (want 'pattern | reason'): {raw!r}")
        entries.append(Skip(pattern.strip(), reason.strip(), n))
    return SkipList(entries)
