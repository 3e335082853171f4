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
.venv/bin/python -m pytest -ra "$@"
