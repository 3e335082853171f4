"""The GitHub Actions workflows (.github/workflows) and the release's wheel configuration.

actionlint checks every workflow (expressions, contexts, runner labels, action inputs) and runs
shellcheck on the `run:` scripts; cibuildwheel prints the wheel identifiers of
[tool.cibuildwheel] for Linux and macOS (it does so on any host). The rest checks what the
workflows promise against the repository: the commands and script options they use exist, the
versions they name agree, and the checklist's tests are the ones in tests/metal. Seconds, no network.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    """A tool of the test extra: beside this Python first (the venv), else on PATH."""
    return shutil.which(name, path=str(BIN)) or shutil.which(name)


def _workflow(name: str) -> str:
    return (WORKFLOWS / name).read_text()


def test_actionlint_and_shellcheck_pass() -> None:
    actionlint, shellcheck = _tool("actionlint"), _tool("shellcheck")
    if actionlint is None or shellcheck is None:
        pytest.skip("actionlint/shellcheck not installed (the test extra has wheels of them for x86_64 Linux "
                    "and arm64 macOS only)")
    files = sorted(str(p.relative_to(REPO)) for p in WORKFLOWS.glob("*.yml"))
    assert files, "no workflows"
    r = subprocess.run([actionlint, "-no-color", "-config-file", ".github/actionlint.yaml", "-shellcheck", shellcheck,
                        *files], cwd=REPO, capture_output=True, text=True, timeout=120)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr


EXPECTED_WHEELS = {
    "linux": [f"cp3{v}-manylinux_{arch}" for arch in ("x86_64", "aarch64") for v in (11, 12, 13, 14)],
    "macos": [f"cp3{v}-macosx_arm64" for v in (11, 12, 13, 14)],
}


@pytest.mark.parametrize("platform", sorted(EXPECTED_WHEELS))
def test_cibuildwheel_build_identifiers(platform: str) -> None:
    """CPython 3.11-3.14 (triton 3.9.0's), manylinux x86_64 + aarch64 and macOS arm64; no
    free-threaded, PyPy, musllinux or i686 builds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    r = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", platform],
                       cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == EXPECTED_WHEELS[platform], r.stdout


def test_cibuildwheel_macos_deployment_target_and_pins() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    cibw = project["tool"]["cibuildwheel"]
    assert cibw["macos"]["environment"]["MACOSX_DEPLOYMENT_TARGET"] == "14.0"
    requires = project["build-system"]["requires"]
    assert any(r.startswith("ziglang==") for r in requires) and "pip" in requires  # zig's clang, metal-cpp download
    # The release installs the cibuildwheel the test extra pins.
    pin = next(r for r in project["project"]["optional-dependencies"]["test"] if r.startswith("cibuildwheel=="))
    assert f'CIBUILDWHEEL_VERSION: "{pin.split("==")[1]}"' in _workflow("release.yml")


def test_versions_agree() -> None:
    """The triton version in the workflows (cache keys) is the one the scripts build and `check`
    supports."""
    lib = re.search(r"^TMPS_TRITON_VERSION=(\S+)$", (REPO / "scripts" / "lib.sh").read_text(), re.M)
    check = re.search(r'^SUPPORTED_TRITON = "(\S+)"$', (REPO / "python" / "triton_mps" / "check.py").read_text(),
                      re.M)
    assert lib and check and lib.group(1) == check.group(1)
    for name in ("ci.yml", "mac-hardware.yml", "release.yml"):
        assert f'TRITON_VERSION: "{lib.group(1)}"' in _workflow(name), name


def test_build_script_options_exist() -> None:
    """Every option of scripts/build-triton-macos.sh a workflow passes is one the script parses."""
    script = (REPO / "scripts" / "build-triton-macos.sh").read_text()
    parsed = set(re.findall(r"^\s+(--[a-z0-9-]+)\)", script, re.M))
    used = set()
    for wf in WORKFLOWS.glob("*.yml"):
        for line in wf.read_text().splitlines():
            if "scripts/build-triton-macos.sh" in line and not line.lstrip().startswith("#"):
                used |= set(re.findall(r"\s(--[a-z0-9-]+)", line.split("scripts/build-triton-macos.sh", 1)[1]))
    assert used and used <= parsed, f"options the script does not parse: {sorted(used - parsed)}"


def test_ci_jobs() -> None:
    ci = _workflow("ci.yml")
    assert "run: bash .ci/run" in ci  # Linux: what the project's own CI runs
    assert "os: [macos-14, macos-15]" in ci
    # One triton build per version, Python and recipe, restored by the macOS jobs; the self-hosted
    # Mac's key has the same form (its Python is its own: 3.12 shares CI's wheel).
    key = "triton-${TRITON_VERSION}-macos-arm64-py${MAC_PYTHON}-${{ hashFiles('scripts/build-triton-macos.sh') }}"
    assert ci.count(key) == 1 and 'MAC_PYTHON: "3.12"' in ci
    assert re.search(r"triton-\$\{TRITON_VERSION\}-macos-arm64-py\$\(tmps_python_version \"\$py\"\)-"
                     r"\$\{\{ hashFiles\('scripts/build-triton-macos.sh'\) \}\}", _workflow("mac-hardware.yml"))
    assert "fail-on-cache-miss: true" in ci
    assert "bash scripts/test.sh" in ci and "triton-mps check" in ci


def test_hardware_job() -> None:
    hw = _workflow("mac-hardware.yml")
    assert "runs-on: [self-hosted, macOS, ARM64, apple-gpu]" in hw
    assert 'TMPS_REQUIRE_APPLE_GPU: "1"' in hw and "-m mac tests" in hw
    for step in ("triton-mps selftest", "scripts/demo.sh", "triton_mps.bench --device metal",
                 "actions/upload-artifact"):
        assert step in hw, step
    checklist = (REPO / "docs" / "mac-checklist.md").read_text()
    assert "apple-gpu" in checklist and "mac-hardware.yml" in checklist


def test_checklist_lists_the_hardware_tests() -> None:
    """Every test of tests/metal/test_mac_checklist.py is named in docs/mac-checklist.md, and every
    test the checklist names there exists."""
    source = (REPO / "tests" / "metal" / "test_mac_checklist.py").read_text()
    defined = set(re.findall(r"^def (test_\w+)", source, re.M))
    checklist = (REPO / "docs" / "mac-checklist.md").read_text()
    named = set(re.findall(r"test_mac_checklist\.py::(test_\w+)", checklist))
    assert defined and defined == named, (sorted(defined - named), sorted(named - defined))


def _conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tmps_root_conftest", REPO / "tests" / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Dev:
    def __init__(self, name: str, simulator: bool = False) -> None:
        self.name, self.is_simulator, self.is_emulated = name, simulator, False


@pytest.mark.parametrize("devices, profiler, expected", [
    # GitHub's hosted runners: the paravirtual GPU (Apple5) is not listed by the native core.
    ([_Dev("sim", True)], '{"SPDisplaysDataType": [{"sppci_model": "Apple Paravirtual device"}]}', "Paravirtual"),
    ([_Dev("Apple Paravirtual device"), _Dev("sim", True)], "", "paravirtual GPU"),
    ([_Dev("sim", True)], "", "apple7"),
    ([_Dev("Apple M2 Pro"), _Dev("sim", True)], "", None),
])
def test_paravirtual_gpu_skip_reason(monkeypatch: pytest.MonkeyPatch, devices: list[Any], profiler: str,
                                     expected: str | None) -> None:
    conftest = _conftest()
    monkeypatch.setattr(conftest.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(conftest.triton_mps, "devices", lambda: devices)
    monkeypatch.setattr(conftest, "system_gpu_names", lambda: profiler)
    reason = conftest.apple_gpu_skip_reason()
    assert reason is None if expected is None else reason is not None and expected in reason, reason
