"""tools/record_outputs.py: the launch-by-launch comparison of two builds' results."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import torch

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool():
    if str(TOOLS) not in sys.path:
        sys.path.append(str(TOOLS))
    return importlib.import_module("record_outputs")


def _write(run: Path, records: list[dict]) -> None:
    run.mkdir()
    (run / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _rec(test, index, inputs, outputs):
    return {"test": test, "kernel": "k", "index": index, "grid": [1, 1, 1], "inputs": inputs, "outputs": outputs}


def test_compare_reports_only_results_that_differ_for_the_same_inputs(tmp_path, capsys):
    tool = _tool()
    _write(tmp_path / "a", [_rec("t1", 0, "i", "o"), _rec("t2", 0, "i", "o"), _rec("t3", 0, "x", "o")])
    _write(tmp_path / "b", [_rec("t1", 0, "i", "o"), _rec("t2", 0, "i", "changed"), _rec("t3", 0, "y", "z")])
    assert tool.compare(tmp_path / "a", tmp_path / "b") == 1
    out = capsys.readouterr().out
    assert "with the same inputs: 2" in out and "results differ: 1" in out and "t2 k launch 0" in out
    assert "t3" not in out.split("results differ")[1]  # other inputs: left out, not called a change
    assert tool.compare(tmp_path / "a", tmp_path / "a") == 0


def test_digest_sees_every_byte_of_the_arguments_memory():
    tool = _tool()
    t = torch.arange(8, dtype=torch.float32)
    view = t[2:5]  # a view: the whole storage is hashed
    a = np.arange(6, dtype=np.int16).reshape(2, 3)[:, 1:]
    before = tool._digest((view, a, 3))
    t[7] = -1.0
    assert tool._digest((view, a, 3)) != before
    a[0, 0] = 100
    assert tool._digest((view, (a,), 3)) != tool._digest((view, np.zeros(1), 3))
