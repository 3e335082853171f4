#!/usr/bin/env bash
# Install triton-mps and run the demo kernel on the default device (Metal on a Mac, the
# simulator elsewhere). Usage: bash scripts/demo.sh
# Reinstalls only when the sources changed since the last install by this script (a stamp
# in .venv/), so a rerun goes straight to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
STAMP=.venv/.triton-mps-demo-stamp
step() { printf '\n==> %s\n' "$*"; }

# What the installed build depends on: the sources, the build files and the extras asked for.
sources_digest() {
  { find csrc python third_party CMakeLists.txt pyproject.toml -type f \
      -not -path '*/__pycache__/*' -not -path 'third_party/metal-cpp/download/*' | LC_ALL=C sort | xargs sha256sum
    echo "extras=demo"; } | sha256sum | cut -d' ' -f1
}

if ! [ -x .venv/bin/python ]; then
  step "creating .venv"
  "$PY" -m venv .venv
fi
digest=$(sources_digest)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ] && .venv/bin/python -c "import triton_mps" 2>/dev/null; then
  step "triton-mps is installed and current (sources unchanged): skipping the install"
else
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
  step "updating pip"
  .venv/bin/python -m pip install -q --upgrade pip
  step "installing triton-mps[demo]: downloads torch and triton, then builds the C++ core (first time: several minutes)"
  start=$SECONDS
  .venv/bin/python -m pip install --progress-bar on ".[demo]"
  echo "$digest" > "$STAMP"
  step "installed in $((SECONDS - start)) s"
fi
step "running examples/demo.py"
.venv/bin/python examples/demo.py
