"""`python -m triton_mps check` and the `triton-mps` console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from triton_mps import check

NAMES = {"os", "native core", "device", "metal", "simulator toolchain", "kernel run", "torch", "triton", "mlx",
         "cache dirs"}


def test_check_json_on_this_machine():
    run = subprocess.run([sys.executable, "-m", "triton_mps", "check", "--json"], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is True
    by_name = {c["name"]: c for c in report["checks"]}
    assert set(by_name) == NAMES
    assert all(c["status"] in ("PASS", "WARN", "FAIL") for c in report["checks"])
    assert all(c["fix"] for c in report["checks"] if c["status"] != "PASS"), "a WARN/FAIL says what to do"
    for required in ("native core", "device", "kernel run", "cache dirs"):
        assert by_name[required]["status"] == "PASS", by_name[required]


def test_failed_required_check_exits_non_zero(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRITON_MPS_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(check, "CHECKS", [check.check_os, check.check_cache_dirs])
    assert check.main([]) == 1
    out = capsys.readouterr().out
    assert "FAIL  cache dirs" in out and "-> make it writable" in out and out.rstrip().endswith("1 failed")
    monkeypatch.setattr(check, "CHECKS", [check.check_os])
    assert check.main(["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"][0]["status"] == "PASS"


def test_console_script_and_usage():
    script = Path(sys.executable).parent / ("triton-mps.exe" if os.name == "nt" else "triton-mps")
    assert script.exists(), "pip install . installs the triton-mps console script"
    run = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "check" in run.stdout and "selftest" in run.stdout
    bad = subprocess.run([str(script), "frobnicate"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown command" in bad.stderr
