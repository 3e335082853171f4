#!/usr/bin/env bash
# Install triton-mps and run the demo kernel on the default device (Metal on a Mac, the
# simulator elsewhere). Usage: bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ".[demo]"
.venv/bin/python examples/demo.py
