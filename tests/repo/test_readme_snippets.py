"""The README's Python snippets marked `<!-- runnable -->` run as written (each as its own
file, from the repository root, in one fresh interpreter: @triton.jit needs source files)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.S)
RUNNER = """
import runpy, sys, traceback
for path in sys.argv[1:]:
    print("running", path, flush=True)
    runpy.run_path(path, run_name="__main__")
"""


def snippets() -> list[tuple[int, str]]:
    text = (ROOT / "README.md").read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in RUNNABLE.finditer(text)]


def test_readme_has_runnable_snippets():
    assert len(snippets()) >= 4


def test_readme_snippets_run(tmp_path):
    paths = []
    for line, code in snippets():
        path = tmp_path / f"readme_line_{line}.py"
        path.write_text(code)
        paths.append(str(path))
    run = subprocess.run([sys.executable, "-c", RUNNER, *paths], cwd=ROOT, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert run.stdout.count("running ") == len(paths)
