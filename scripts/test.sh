#!/usr/bin/env bash
# Install what the tests need and run every test (pytest, which also builds and runs the C++
# gtest suite). Usage: bash scripts/test.sh [pytest args]
# On a Mac: googletest from Homebrew, triton 3.9.0 as scripts/demo.sh gets it (the wheel built
# before, else a one-time build from source), and the [metal] extra (torch) beside [test].
# TMPS_DRY_RUN=1 prints the steps instead (TMPS_PRETEND_OS=Darwin: the Mac's, on any machine).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
VENV=${TMPS_VENV:-.venv}

if tmps_on_mac; then
  tmps_mac_prereqs
  # googletest for the C++ suite comes from Homebrew; CMake's find_package(GTest) in
  # tests/cpp/test_cpp.py finds it through CMAKE_PREFIX_PATH.
  if tmps_pretend_missing gtest || tmps_pretend_missing brew || ! command -v brew >/dev/null 2>&1 ||
    ! brew list --versions googletest >/dev/null 2>&1; then
    run brew install googletest
  fi
  tmps_export CMAKE_PREFIX_PATH "$(tmps_brew_prefix googletest)${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  EXTRAS=test,metal
else
  # googletest for the C++ suite comes from Debian (not on PyPI).
  if tmps_pretend_missing gtest ||
    { ! [ -f /usr/include/gtest/gtest.h ] && ! [ -f /usr/local/include/gtest/gtest.h ]; }; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    run ${SUDO:+"$SUDO"} apt-get update -qq
    run ${SUDO:+"$SUDO"} apt-get install -y -qq libgtest-dev
  fi
  EXTRAS="test"
fi

if tmps_on_mac; then
  tmps_mac_check_venv "$VENV"
  PY=$(tmps_mac_python)
else
  PY=${PYTHON:-python3}
fi
[ -x "$VENV/bin/python" ] || run "$PY" -m venv "$VENV"
if tmps_on_mac; then tmps_mac_ensure_triton "$VENV"; fi
tmps_export CMAKE_BUILD_PARALLEL_LEVEL "${CMAKE_BUILD_PARALLEL_LEVEL:-$(tmps_ncpu)}"
run "$VENV/bin/python" -m pip install -q --upgrade pip
run "$VENV/bin/python" -m pip install -q ".[$EXTRAS]"
status=0
run "$VENV/bin/python" -m pytest -ra "$@" || status=$?

# The Triton-level tests (the folder tests/triton, see tests/README.md) again, on the emulated
# Metal device (Linux builds with zig's clang): the Metal backend (csrc/metal/) running against
# csrc/metal_emu/ (issue 11). The native-core tests on it are gtests
# (tests/cpp/test_metal_emu_device.cpp) and tests/metal/.
# It emulates macOS 14, the oldest supported: every kernel is compiled for MSL 3.1, where the
# simulator hides MSL 3.2 API (issue 18, docs/msl-versions.md). The first pass compiles the
# kernels that differ (device-scope fences) at MSL 3.2; tests/metal/test_metal_emu.py covers
# macOS 15.
# Runs even when the first pass failed, so one CI run reports both. (A Mac has no emulated device;
# a dry run prints it off macOS.)
if { tmps_dry && ! tmps_on_mac; } || { ! tmps_dry &&
  "$VENV/bin/python" -c "import sys, triton_mps; sys.exit(not any(d.is_emulated for d in triton_mps.devices()))"; }; then
  run env TRITON_MPS_DEVICE=metal-emu TRITON_MPS_EMU_MACOS=14.0 "$VENV/bin/python" -m pytest -ra "$@" tests/triton \
    || status=$?
fi
exit "$status"
