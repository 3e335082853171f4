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


def _pretend(monkeypatch, tmp_path, *, mac: bool, triton: str | None) -> None:
    monkeypatch.setattr(check, "_on_mac", lambda: mac)
    real = check._version
    monkeypatch.setattr(check, "_version", lambda dist: triton if dist == "triton" else real(dist))
    monkeypatch.setenv("TMPS_TRITON_CACHE", str(tmp_path / "cache"))


def test_triton_missing_on_a_mac_says_what_to_run(monkeypatch, tmp_path):
    """PyPI has no macOS triton: `check` names the build script (or the demo), its cost, and later the wheel."""
    _pretend(monkeypatch, tmp_path, mac=True, triton=None)
    c = check.check_triton()
    assert (c.status, c.required) == ("WARN", False), c
    assert f"bash scripts/build-triton-macos.sh --python {sys.executable} --install" in c.fix
    assert "bash scripts/demo.sh" in c.fix and "35-60 min" in c.fix and "8 GB" in c.fix
    # A wheel the script built for this Python: install it, no build.
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    wheel = tmp_path / "cache" / "wheels" / f"triton-3.9.0-{tag}-{tag}-macosx_15_0_arm64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    other = wheel.parent / "triton-3.9.0-cp399-cp399-macosx_15_0_arm64.whl"  # another Python's: not it
    other.write_bytes(b"")
    c = check.check_triton()
    assert c.fix == f"a wheel was built before: {sys.executable} -m pip install {wheel}", c.fix
    # A Python triton 3.9.0 does not support: say so first.
    monkeypatch.setattr(check, "TRITON_PYTHONS", ((3, 98), (3, 99)))
    assert "needs Python 3.98-3.99" in check.check_triton().fix


def test_triton_cache_location_matches_the_scripts(monkeypatch, tmp_path):
    monkeypatch.delenv("TMPS_TRITON_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert check.triton_wheel_cache() == tmp_path / "triton-mps" / "triton-3.9.0"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(check, "_on_mac", lambda: True)
    assert check.triton_wheel_cache() == Path.home() / "Library" / "Caches" / "triton-mps" / "triton-3.9.0"


def test_triton_missing_off_a_mac_is_a_failure(monkeypatch, tmp_path):
    _pretend(monkeypatch, tmp_path, mac=False, triton=None)
    c = check.check_triton()
    assert (c.status, c.required, c.fix) == ("FAIL", True, "pip install triton==3.9.0"), c


def test_triton_versions(monkeypatch, tmp_path):
    # A source build's local version label is still 3.9.0.
    _pretend(monkeypatch, tmp_path, mac=False, triton="3.9.0+git1a2b3c4d")
    assert check.check_triton().status == "PASS"
    _pretend(monkeypatch, tmp_path, mac=True, triton="3.8.0")
    c = check.check_triton()
    assert c.status == "WARN" and "build-triton-macos.sh" in c.fix and "pip install triton==" not in c.fix, c
    _pretend(monkeypatch, tmp_path, mac=False, triton="3.8.0")
    assert check.check_triton().fix == "pip install triton==3.9.0"


def test_metal_check_names_a_paravirtual_gpu(monkeypatch):
    # GitHub's hosted macOS runners: a VM whose GPU the native core does not list (family < apple7).
    from triton_mps import check, runtime

    monkeypatch.setattr(check, "_on_mac", lambda: True)
    monkeypatch.setattr(check, "system_gpu_names", lambda: '{"sppci_model": "Apple Paravirtual device"}')
    monkeypatch.setattr(runtime, "devices", lambda: [])
    c = check.check_metal()
    assert c.status == "FAIL" and "Apple Paravirtual device" in c.detail and "VM" in c.detail, c
