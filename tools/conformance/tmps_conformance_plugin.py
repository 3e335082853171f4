"""pytest plugin loaded into a run of Triton's upstream tests by tools/conformance/run.py.

- `--tmps-ids FILE`: run only the node ids listed in FILE (one per line), in collection order.
- `--tmps-skips FILE`: skip the tests the skip list names (each entry with its reason).
- `--tmps-report FILE`: one JSON object per test (JSON lines; each xdist worker's reports reach
  the controller, which alone writes): id, outcome, duration, message and root cause.

The root cause is computed in the process that ran the test, from the live traceback: the
deepest frame inside the triton_mps package (our code), else the deepest frame outside the
test file (Triton's front end, the runtime), else the test's own assertion.
"""

from __future__ import annotations

import gc
import json
import os
import re
import traceback
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in os.sys.path:
    os.sys.path.insert(0, str(_HERE))

from skiplist import load_skips  # noqa: E402


def pytest_addoption(parser):
    group = parser.getgroup("triton-mps conformance")
    group.addoption("--tmps-ids", default=None, help="file of node ids to run (others deselected)")
    group.addoption("--tmps-skips", default=None, help="skip list (pattern | reason)")
    group.addoption("--tmps-report", default=None, help="JSON-lines report, one record per test")


def pytest_collection_finish(session):
    # What exists once the tests are collected (torch, Triton, ~13,000 test items) lives to the
    # end: keep it out of the garbage collector's full passes, which would walk it every time.
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(session, config, items):
    ids_file = config.getoption("--tmps-ids")
    if ids_file:
        wanted = {line.strip() for line in Path(ids_file).read_text().splitlines() if line.strip()}
        keep, drop = [], []
        for it in items:
            (keep if _rel_id(config, it) in wanted else drop).append(it)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
    skips_file = config.getoption("--tmps-skips")
    if skips_file:
        skips = load_skips(Path(skips_file))
        for it in items:
            reason = skips.reason_for(_rel_id(config, it))
            if reason:
                it.add_marker(pytest.mark.skip(reason=f"triton-mps skip list: {reason}"))
    for it in items:
        seconds = _SLOW.get(_rel_id(config, it).split("[")[0])
        if seconds and seconds > (config.getoption("timeout", None) or 0):
            it.add_marker(pytest.mark.timeout(seconds))


# Tests that ran longer than the default per-test timeout on the simulator before it ran a
# SIMD-group as one (measured on 2 cores): their own timeout, so that `run.py` passes on the whole
# file without --timeout on a slow or loaded machine. (Now, issue 29: test_load_store_same_ptr
# ~8 s, the downcast tests 1-2.5 min each with two side by side.)
_SLOW = {
    # 1,000 launches of 65,536 programs x 1,024 threads
    "python/test/unit/language/test_core.py::test_load_store_same_ptr": 1200,
    # every value of each format: 256 x 2^24 conversions per downcast test
    "python/test/unit/language/test_conversions.py::test_typeconvert_downcast": 1500,
    "python/test/unit/language/test_conversions.py::test_typeconvert_upcast": 1500,
}


def _rel_id(config, item) -> str:
    """The node id relative to the folder pytest was started in (the upstream root), whatever
    rootdir pytest chose: the form of the ids in the id, skip and ratchet files."""
    rel = os.path.relpath(str(item.path), str(config.invocation_params.dir)).replace(os.sep, "/")
    _, sep, rest = item.nodeid.partition("::")
    return rel + sep + rest


# ---- root cause ------------------------------------------------------------------------------

_NUM = re.compile(r"(?<![A-Za-z0-9_.])(0x[0-9a-fA-F]+|\d+(\.\d+)?(e[-+]?\d+)?)(?![A-Za-z0-9_])")
_QUOTED = re.compile(r"'[^']*'")


def normalize_message(msg: str) -> str:
    """First line of an error message with the parts that vary per test (numbers, quoted names,
    tensor dumps) blanked, so that one cause groups many tests."""
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    # Triton's CompilationError: "at L:C:", the source, then the error (last line).
    line = lines[-1] if lines and re.fullmatch(r"at \d+:\d+:", lines[0]) else (lines[0] if lines else "")
    line = re.sub(r"kernel '[^']*'", "kernel '…'", line)
    line = _QUOTED.sub("'…'", line) if "argument" in line or "kernel" in line else line
    line = _NUM.sub("N", line)
    return line[:200]


def root_cause(excinfo, test_root: str) -> dict:
    """`where`: triton_mps (a frame of ours), else torch, triton or library (the deepest frame
    outside the upstream test folder `test_root`, by its package), else test (the upstream
    tests' own code)."""
    exc = excinfo.value
    frames = traceback.extract_tb(excinfo.tb)
    root = test_root.rstrip(os.sep) + os.sep
    ours = [f for f in frames if "/triton_mps/" in f.filename]
    outside = [f for f in frames if not f.filename.startswith(root) and "/_pytest/" not in f.filename
               and "/pluggy/" not in f.filename and "/unittest/" not in f.filename]
    where = "test"
    frame = None
    if ours:
        frame, where = ours[-1], "triton_mps"
    elif outside:
        frame = outside[-1]
        where = next((name for name in ("torch", "triton") if f"/{name}/" in frame.filename), "library")
    elif frames:
        frame = frames[-1]
    loc = ""
    if frame is not None:
        fn = frame.filename
        if fn.startswith(root):
            fn = fn[len(root):]
        for marker in ("/triton_mps/", "/site-packages/", "/python/test/"):
            if marker in fn:
                fn = fn.split(marker, 1)[1]
                fn = ("triton_mps/" + fn) if marker == "/triton_mps/" else fn
                break
        loc = f"{fn}:{frame.name}"
    msg = str(exc)
    kind = type(exc).__name__
    if where == "test" and isinstance(exc, AssertionError):
        cause = f"wrong result or test assertion ({kind}) in {frame.name if frame else '?'}"
    else:
        cause = f"{kind}: {normalize_message(msg)}"
    return {"where": where, "frame": loc, "cause": cause}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "setup":
        report.user_properties.append(("tmps_id", _rel_id(item.config, item)))
    if call.excinfo is not None and report.failed:
        try:
            info = root_cause(call.excinfo, str(item.config.invocation_params.dir))
        except Exception as exc:  # the report must not break the run
            info = {"where": "?", "frame": "", "cause": f"(root cause unavailable: {exc})"}
        report.user_properties.append(("tmps_root_cause", info))
        report.user_properties.append(("tmps_message", str(call.excinfo.value)[:2000]))


class _Writer:
    def __init__(self, path: Path):
        self.path = path
        self.records: dict[str, dict] = {}

    def add(self, report) -> None:
        rec = self.records.get(report.nodeid)
        if rec is None:
            node_id = dict(report.user_properties).get("tmps_id", report.nodeid)
            rec = {"id": node_id, "outcome": "passed", "duration": 0.0}
            self.records[report.nodeid] = rec
        rec["duration"] = round(rec["duration"] + getattr(report, "duration", 0.0), 3)
        props = dict(report.user_properties)
        # Extra fields other plugins attach to a test (e.g. tmps_inductor_plugin's launch count).
        rec.update({k[len("tmps_rec_"):]: v for k, v in props.items() if k.startswith("tmps_rec_")})
        if report.skipped and hasattr(report, "wasxfail"):
            rec["outcome"] = "xfailed"
        elif report.skipped and rec["outcome"] == "passed":
            rec["outcome"] = "skipped"
            lr = report.longrepr
            rec["message"] = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)[:500]
        elif report.failed:
            rec["outcome"] = "failed" if report.when == "call" else "error"
            text = str(report.longrepr)
            last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "?")
            rec.update(props.get("tmps_root_cause")
                       or {"where": "runner", "frame": "", "cause": f"no traceback (worker crash?): {last[:160]}"})
            rec["message"] = props.get("tmps_message") or str(report.longrepr)[-2000:]
            rec["phase"] = report.when

    def flush(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w") as f:
            for rec in self.records.values():
                f.write(json.dumps(rec) + "\n")


_writer: _Writer | None = None


def pytest_configure(config):
    global _writer
    path = config.getoption("--tmps-report")
    # xdist workers forward their reports; only the controller (or a run without xdist) writes.
    if path and not hasattr(config, "workerinput"):
        _writer = _Writer(Path(path))


def pytest_runtest_logreport(report):
    if _writer is not None:
        _writer.add(report)


def pytest_sessionfinish(session, exitstatus):
    if _writer is not None:
        _writer.flush()
