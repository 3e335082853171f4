#!/usr/bin/env bash
# Install triton-mps and run the demo kernel on the default device (Metal on a Mac, the
# simulator elsewhere). Usage: bash scripts/demo.sh
# Reinstalls only when the sources changed since the last install by this script (a stamp
# in .venv/), so a rerun goes straight to the demo.
# On a Mac it first needs triton 3.9.0, which PyPI has no macOS wheel of: it uses the one in .venv,
# else a wheel built before, else builds it once (scripts/build-triton-macos.sh: about 35-60 min,
# ~8 GB of disk at its peak), then installs triton-mps with its [metal] extra (torch with MPS).
# TMPS_DRY_RUN=1 prints the steps instead (TMPS_PRETEND_OS=Darwin: the Mac's, on any machine).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
VENV=${TMPS_VENV:-.venv}
STAMP=$VENV/.triton-mps-demo-stamp
if tmps_on_mac; then EXTRAS=demo,metal; else EXTRAS=demo; fi

# What the installed build depends on: the sources, the build files and the extras asked for.
# (macOS has shasum where Linux has sha256sum; both print "<hash>  <file>".)
if command -v sha256sum >/dev/null 2>&1; then SHA=(sha256sum); else SHA=(shasum -a 256); fi
sources_digest() {
  { find csrc python third_party CMakeLists.txt pyproject.toml -type f \
      -not -path '*/__pycache__/*' -not -path 'third_party/metal-cpp/download/*' | LC_ALL=C sort | xargs "${SHA[@]}"
    echo "extras=$EXTRAS"; } | "${SHA[@]}" | cut -d' ' -f1
}

if tmps_on_mac; then
  tmps_mac_prereqs
  tmps_mac_check_venv "$VENV"
  PY=$(tmps_mac_python)
else
  PY=${PYTHON:-python3}
fi
if ! [ -x "$VENV/bin/python" ]; then
  step "creating $VENV"
  run "$PY" -m venv "$VENV"
fi
if tmps_on_mac; then tmps_mac_ensure_triton "$VENV"; fi
digest=$(sources_digest)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ] && "$VENV/bin/python" -c "import triton_mps" 2>/dev/null; then
  step "triton-mps is installed and current (sources unchanged): skipping the install"
else
  tmps_export CMAKE_BUILD_PARALLEL_LEVEL "${CMAKE_BUILD_PARALLEL_LEVEL:-$(tmps_ncpu)}"
  step "updating pip"
  run "$VENV/bin/python" -m pip install -q --upgrade pip
  if tmps_on_mac; then fetched="torch"; else fetched="torch and triton"; fi
  step "installing triton-mps[$EXTRAS]: downloads $fetched, then builds the C++ core (first time: several minutes)"
  start=$SECONDS
  run "$VENV/bin/python" -m pip install --progress-bar on ".[$EXTRAS]"
  if ! tmps_dry; then echo "$digest" > "$STAMP"; fi
  step "installed in $((SECONDS - start)) s"
fi
step "running examples/demo.py"
run "$VENV/bin/python" examples/demo.py
