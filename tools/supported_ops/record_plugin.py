"""pytest plugin (`-p record_plugin`, loaded by tools/supported_ops/generate.py record): records
which test lowered which TTGIR op, by wrapping every entry of the compiler's op table. The
record is rewritten after every few tests, so a run cut short still leaves what it saw."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

_seen: dict[str, set[str]] = defaultdict(set)
_tests_run = [0]


def _current_test() -> str:
    # "tests/compiler/test_reduce.py::test_sum[float32] (call)" -> the test without parameters
    current = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    return current.split("[", 1)[0]


def _recording(name, fn):
    def lower(ctx, op):
        _seen[name].add(_current_test())
        return fn(ctx, op)

    return lower


def _write() -> None:
    out = os.environ.get("TMPS_RECORD_OPS_OUT")
    if out:
        record = {"pytest_args": [a for a in sys.argv[1:] if not a.startswith("-p") and a != "record_plugin"],
                  "tests_run": _tests_run[0], "ops": {k: sorted(v) for k, v in sorted(_seen.items())}}
        Path(out).write_text(json.dumps(record, indent=1) + "\n")


def pytest_configure(config):
    from triton_mps.compiler import lowering

    for table in [lowering.LOWERINGS] + [t for _, t in lowering.GUARDED_LOWERINGS]:  # f64 ops: guarded
        for name, fn in list(table.items()):
            table[name] = _recording(name, fn)


def pytest_runtest_logfinish(nodeid, location):
    _tests_run[0] += 1
    if _tests_run[0] % 25 == 0:
        _write()


def pytest_unconfigure(config):
    _write()
