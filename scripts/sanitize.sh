#!/usr/bin/env bash
# Builds the native core and the gtest suite with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs them (including the pool stress test: 4 threads, 1M allocations, each freed), then a small
# pytest subset against a sanitized Python extension.
#
#   bash scripts/sanitize.sh            # gtests + pytest subset
#   bash scripts/sanitize.sh --gtest    # gtests only
#   bash scripts/sanitize.sh --pytest   # the pytest subset only (extra arguments go to pytest)
#
# Needs the test extras in .venv (bash scripts/test.sh makes it) and Debian's libgtest-dev.
# Build trees: build/asan-cpp (gtests), build/asan-py (the extension, installed into a
# private prefix; the checkout's .venv is left as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
BIN=$(dirname "$PY")
JOBS=${JOBS:-$(nproc)}
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# halt_on_error: any report fails the run. detect_leaks: the stress test must not leak.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

MODE=${1:-all}
mkdir -p build
if [[ "$MODE" != "--pytest" ]]; then
echo "== gtest suite under ASan+UBSan (build/asan-cpp)"
"$BIN/cmake" -S . -B build/asan-cpp -G Ninja -DCMAKE_MAKE_PROGRAM="$BIN/ninja" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRITON_MPS_BUILD_TESTS=ON -DTRITON_MPS_BUILD_PYTHON=OFF \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" \
  -DPython_EXECUTABLE="$PY" > build/asan-cpp.configure.log
"$BIN/cmake" --build build/asan-cpp -j "$JOBS" > build/asan-cpp.build.log
TMPS_POOL_STRESS_ALLOCS=${TMPS_POOL_STRESS_ALLOCS:-1000000} \
  "$BIN/ctest" --test-dir build/asan-cpp --output-on-failure -j 2 --timeout 900

fi
[[ "$MODE" == "--gtest" ]] && exit 0

echo "== pytest subset with a sanitized extension (build/asan-py)"
# The extension is built with the sanitizers; Python itself is not, so the ASan runtime must
# be loaded first (LD_PRELOAD). Leak checking stays off there: CPython's own allocations at
# exit are reported as leaks.
PREFIX=$ROOT/build/asan-py/prefix
rm -rf "$PREFIX"
CMAKE_ARGS="-DCMAKE_C_FLAGS='$SAN' -DCMAKE_CXX_FLAGS='$SAN' -DCMAKE_SHARED_LINKER_FLAGS='$SAN' -DCMAKE_MODULE_LINKER_FLAGS='$SAN'" \
  "$PY" -m pip install -q --no-deps --target "$PREFIX" \
  --config-settings=build-dir=build/asan-py/build --config-settings=cmake.build-type=RelWithDebInfo . \
  > build/asan-py.build.log 2>&1
LIBASAN=$(c++ -print-file-name=libasan.so)
LIBUBSAN=$(c++ -print-file-name=libubsan.so)
# The simulator's own fault handlers (csrc/sim/signals.cpp) stay in charge of SIGSEGV/SIGFPE.
# Reports go to build/asan-py/report.<pid> (pytest captures stderr).
rm -f build/asan-py/report.*
ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:allow_user_segv_handler=1:log_path=$ROOT/build/asan-py/report \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$ROOT/build/asan-py/report \
  LD_PRELOAD="$LIBASAN $LIBUBSAN" PYTHONPATH="$PREFIX" \
  "$PY" -m pytest -q -p no:cacheprovider \
  tests/errors/test_msl_api.py tests/errors/test_core_inputs.py tests/api/test_buffers.py tests/sim/test_memcheck.py "${@:2}" \
  || { cat build/asan-py/report.* 2>/dev/null; exit 1; }
