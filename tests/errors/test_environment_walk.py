"""Every TRITON_MPS_* variable of docs/configuration.md, set to garbage: what the user sees names the
variable (a warning at import, or the error where the value is used), and the import-time check
and the docs state the same ranges (issue 30 item 4).

Each value runs in a child process that imports triton_mps and builds and runs a small MSL kernel
on the default device.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import triton_mps  # noqa: F401  (the package must import here too)
from triton_mps import _env

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"

CHILD = textwrap.dedent(r"""
    import warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            import numpy as np, triton_mps
            src = '''
            #include <metal_stdlib>
            using namespace metal;
            kernel void twice(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) { y[i] = 2.0f * x[i]; }
            '''
            dev = triton_mps.default_device()
            k = triton_mps.compile_msl(src, "twice", dev)
            x = np.arange(64, dtype=np.float32); y = np.full(64, np.nan, np.float32)
            k(x, y, grid=2, threads=32); dev.synchronize()
            assert (y == 2 * x).all()
            print("RAN")
        except Exception as e:
            print("RAISED", type(e).__name__, str(e).replace("\n", " "))
    for w in seen:
        print("WARNING", str(w.message).replace("\n", " "))
""")

# Values that no variable accepts (per kind), and the ones that pass a syntax check but not the use.
GARBAGE = ["garbage!", "-1"]
PATH_GARBAGE = ["/dev/null/garbage"]
EXTRA = {
    "TRITON_MPS_SIM_THREADS": ["100000", "0"],
    "TRITON_MPS_DEVICE": ["7"],
    "TRITON_MPS_SIM_CPU": ["bogus_cpu", "x86_64+bogusfeature"],
    "TRITON_MPS_TIMEOUT": ["1e99"],
}
# Read by tools only, or any text is a valid value: garbage is not an error there.
NOT_CHECKED = {
    "TRITON_MPS_CHECK_CACHE": "read by tools/macos_check.py only (tests/repo/test_macos_check.py)",
    "TRITON_MPS_EMU_CHIP": "any text is a chip name for the emulated device",
}


def documented() -> list[str]:
    names = []
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`(TRITON_MPS_[A-Z0-9_]+)`\s*\|(.*)", line)
        if m and "CMake option" not in m.group(2):
            names.append(m.group(1))
    return names


def cases() -> list[tuple[str, str]]:
    out = []
    for name in documented():
        if name in NOT_CHECKED:
            continue
        check, _ = _env.VARIABLES[name]
        values = PATH_GARBAGE if check is _env._any else GARBAGE
        out += [(name, v) for v in values + EXTRA.get(name, [])]
    return out


def test_every_documented_variable_is_known_to_the_import_check():
    names = documented()
    assert len(names) > 20, names
    assert set(names) - set(_env.VARIABLES) == set()
    assert set(NOT_CHECKED) <= set(names)


@pytest.mark.parametrize(("name", "value"), cases())
def test_garbage_value_names_its_variable(name, value, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_MPS_")}
    env[name] = value
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    said = [line for line in out.splitlines() if line.startswith(("WARNING", "RAISED"))]
    assert any(name in line for line in said), f"{name}={value!r}: nothing names the variable:\n{out}"


def test_docs_state_the_ranges_the_checks_enforce():
    text = DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `TRITON_MPS_SIM_THREADS`"))
    assert f"1 to {_env.MAX_SIM_THREADS}" in row, row
    threads_ok = _env.VARIABLES["TRITON_MPS_SIM_THREADS"][0]
    assert threads_ok("4096") and not threads_ok("4097") and not threads_ok("0")
    row = next(line for line in text.splitlines() if line.startswith("| `TRITON_MPS_SIM_CPU`"))
    assert "x86_64_v4" in row and "+feature" in row, row
