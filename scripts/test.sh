#!/usr/bin/env bash
# Install what the tests need and run every test (pytest, which also builds and runs the C++
# gtest suite). Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

# googletest for the C++ suite comes from Debian (not on PyPI).
if ! [ -f /usr/include/gtest/gtest.h ] && ! [ -f /usr/local/include/gtest/gtest.h ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq libgtest-dev
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ".[test]"
status=0
.venv/bin/python -m pytest -ra "$@" || status=$?

# The Triton-level tests (the folder tests/triton, see tests/README.md) again, on the emulated
# Metal device (Linux builds with zig's clang): the Metal backend (csrc/metal/) running against
# csrc/metal_emu/ (issue 11). The native-core tests on it are gtests
# (tests/cpp/test_metal_emu_device.cpp) and tests/metal/.
# It emulates macOS 14, the oldest supported: every kernel is compiled for MSL 3.1, where the
# simulator hides MSL 3.2 API (issue 18, docs/msl-versions.md). The first pass compiles the
# kernels that differ (device-scope fences) at MSL 3.2; tests/metal/test_metal_emu.py covers
# macOS 15.
# Runs even when the first pass failed, so one CI run reports both.
if .venv/bin/python -c "import sys, triton_mps; sys.exit(not any(d.is_emulated for d in triton_mps.devices()))"; then
  TRITON_MPS_DEVICE=metal-emu TRITON_MPS_EMU_MACOS=14.0 .venv/bin/python -m pytest -ra "$@" tests/triton \
    || status=$?
fi
exit "$status"
