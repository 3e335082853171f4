#!/usr/bin/env bash
# Builds the triton 3.9.0 wheel from source on a Mac, once: PyPI has no macOS wheel and no sdist of
# it. The recipe is upstream's own macOS CI (.github/workflows/build-macos.yml in triton-lang/triton):
# Homebrew's ccache, llvm, lld and coreutils, TRITON_BUILD_WITH_CLANG_LLD=TRUE, TRITON_BUILD_WITH_O1,
# MAX_JOBS; triton's setup downloads its prebuilt LLVM (macos-arm64) to ~/.triton/llvm.
# The wheel is kept in the cache (below) and reused by later runs, scripts/demo.sh and
# scripts/test.sh; a wheel is specific to one Python version (cp311 ... cp315).
#
# Usage: bash scripts/build-triton-macos.sh [options]
#   --python PY       the Python to build for (3.11-3.15). Default: $PYTHON, else the first of
#                     python3.12, python3.13, python3.11, python3.14, python3 on PATH
#   --install         pip install the wheel into the environment of --python
#   --output-dir DIR  also copy the wheel into DIR (CI: to cache or upload it)
#   --jobs N          parallel compile jobs (default: the CPUs, at most one per 2 GB of memory)
#   --rebuild         build even when the cache has a wheel for this Python
#   --keep-source     keep the source and build tree (~6 GB) after a successful build
#   --no-o1           a fully optimized build (slower to build) instead of upstream CI's -O1
#   --force           build even with less free disk than the build needs
#   --verbose         print the whole build output (always in the log)
#   --print-wheel     print the cached wheel for --python and exit (status 1 when there is none)
# Environment: TMPS_TRITON_CACHE (default ~/Library/Caches/triton-mps/triton-3.9.0, or
# $XDG_CACHE_HOME/triton-mps/triton-3.9.0), TMPS_TRITON_REF (git tag or branch, default v3.9.0),
# TMPS_TRITON_BREW_LLVM (Homebrew's LLVM formula, default llvm), TMPS_DRY_RUN=1 and
# TMPS_PRETEND_OS (scripts/lib.sh).
set -euo pipefail
ORIG_PWD=$PWD
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# What a clean build takes (README "Quick start"): ~35 min measured on an Apple-silicon Mac
# (triton-lang/triton-ext#126), upstream's macOS CI allows 60 min on a 3-core M1 runner; LLVM
# unpacks to ~1 GB, the NVIDIA toolchain setup.py also fetches is ~0.65 GB, the whole build ~8 GB.
EXPECT_TIME="about 35-60 minutes"
NEED_FREE_GB=10
REPO_URL=https://github.com/triton-lang/triton.git
DEFAULT_REF=v$TMPS_TRITON_VERSION
REF=${TMPS_TRITON_REF:-$DEFAULT_REF}
LLVM_FORMULA=${TMPS_TRITON_BREW_LLVM:-llvm}
# Triton's setup.py appends "+git<hash>" to the version unless the checkout is on a release*
# branch: the clone gets one, so the wheel is exactly 3.9.0.
LOCAL_BRANCH=release/tmps-$TMPS_TRITON_VERSION
PYPI_LLVM=b010a18d2b648cab83c83967ff26b8fde11acdc6
PHASES=6

PY=${PYTHON:-}
INSTALL=0 OUT="" JOBS="" REBUILD=0 KEEP=0 O1=1 FORCE=0 VERBOSE=0 PRINT_WHEEL=0
while [ $# -gt 0 ]; do
  case $1 in
    --python) PY=${2:?--python needs a path}; shift ;;
    --install) INSTALL=1 ;;
    --output-dir) OUT=${2:?--output-dir needs a folder}; shift ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift ;;
    --rebuild) REBUILD=1 ;;
    --keep-source) KEEP=1 ;;
    --no-o1) O1=0 ;;
    --force) FORCE=1 ;;
    --verbose) VERBOSE=1 ;;
    --print-wheel) PRINT_WHEEL=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help lists them)" ;;
  esac
  shift
done

# Paths given relative to where the script was started (it works from the checkout's root).
case $PY in /* | "") ;; */*) PY=$ORIG_PWD/$PY ;; esac
case $OUT in /* | "") ;; *) OUT=$ORIG_PWD/$OUT ;; esac

START=$SECONDS
elapsed() {
  local s=$((SECONDS - START))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}
phase() { printf '\n==> [%s/%s] %s  (elapsed %s)\n' "$1" "$PHASES" "$2" "$(elapsed)"; }

tmps_on_mac || die "this builds triton for macOS (PyPI has no macOS wheel); on $(tmps_os): pip install triton==$TMPS_TRITON_VERSION"

# The Python the wheel is for. In a dry run --python may name an environment not created yet.
if [ -z "$PY" ]; then
  PY=$(tmps_pick_python)
  [ -n "$PY" ] || die "no Python 3.$TMPS_TRITON_PY_MIN-3.$TMPS_TRITON_PY_MAX found: brew install python@3.12, or pass --python"
fi
VPY=$PY
if ! command -v "$PY" >/dev/null 2>&1; then
  tmps_dry || die "--python $PY: not found"
  VPY=$(PYTHON="" tmps_pick_python)
  note "(dry run: $PY does not exist yet; taking the version of $VPY)"
fi
tmps_python_ok "$VPY" ||
  die "$PY is Python $(tmps_python_version "$VPY"); triton $TMPS_TRITON_VERSION supports 3.$TMPS_TRITON_PY_MIN-3.$TMPS_TRITON_PY_MAX"
PYVER=$(tmps_python_version "$VPY")
TAG=$(tmps_python_tag "$VPY")
CACHE=$(tmps_triton_cache)
WHEELS=$CACHE/wheels
SRC=$CACHE/src
LOG=$CACHE/build.log
TRITON_DL=${TRITON_HOME:-$HOME}/.triton

find_wheel() {
  local w found=""
  for w in "$WHEELS/triton-$TMPS_TRITON_VERSION-$TAG-$TAG-"macosx_*.whl; do
    [ -f "$w" ] && found=$w
  done
  printf '%s' "$found"
}

finish() {
  local wheel=$1
  if [ -n "$OUT" ]; then
    run mkdir -p "$OUT"
    run cp "$wheel" "$OUT/"
    note "copied to $OUT/"
  fi
  if [ "$INSTALL" = 1 ]; then
    step "installing $(basename "$wheel") into the environment of $PY"
    run "$PY" -m pip install --force-reinstall --no-deps "$wheel"
  fi
}

WHEEL=$(find_wheel)
if [ "$PRINT_WHEEL" = 1 ]; then
  [ -n "$WHEEL" ] || exit 1
  printf '%s\n' "$WHEEL"
  exit 0
fi
if [ -n "$WHEEL" ] && [ "$REBUILD" = 0 ]; then
  step "triton $TMPS_TRITON_VERSION for Python $PYVER: reusing the wheel built before (--rebuild builds it again)"
  note "$WHEEL"
  finish "$WHEEL"
  exit 0
fi

if [ -z "$JOBS" ]; then
  JOBS=$(tmps_ncpu)
  mem=$(tmps_mem_gb)
  if [ "$mem" -gt 0 ] && [ $((mem / 2)) -lt "$JOBS" ]; then JOBS=$((mem / 2)); fi
  [ "$JOBS" -ge 1 ] || JOBS=1
fi
FREE=$(tmps_free_gb "$CACHE")
FREE=${FREE:-0}

step "building triton $TMPS_TRITON_VERSION from source for Python $PYVER ($TAG): a one-time step"
cat <<EOF
    time:  $EXPECT_TIME on an Apple-silicon Mac ($JOBS parallel jobs; --jobs N)
    disk:  about 8 GB at its peak; $NEED_FREE_GB GB free needed, $FREE GB free now:
             ~1 GB prebuilt LLVM and ~0.65 GB NVIDIA toolchain that triton's setup downloads
               into $TRITON_DL (kept, reused by rebuilds)
             ~6 GB source and build tree in $SRC
               (deleted after a successful build; --keep-source keeps it)
             the wheel in $WHEELS (kept: later runs reuse it)
    needs: the Xcode Command Line Tools (xcode-select --install), Homebrew, network access
    log:   $LOG
EOF
if [ "$FREE" -lt "$NEED_FREE_GB" ]; then
  if [ "$FORCE" = 1 ] || tmps_dry; then
    note "warning: only $FREE GB free where the build goes (--force given or dry run: going on)"
  else
    die "only $FREE GB free on the disk of $CACHE; the build needs about $NEED_FREE_GB GB
    (free some space, or set TMPS_TRITON_CACHE to a folder on another disk; --force tries anyway)"
  fi
fi

phase 1 "Xcode Command Line Tools and Homebrew"
tmps_mac_prereqs
if ! tmps_dry; then note "Command Line Tools: $(xcode-select -p)"; fi

phase 2 "Homebrew packages: ccache $LLVM_FORMULA lld coreutils (upstream's macOS CI)"
if ! tmps_dry && brew list --versions ccache "$LLVM_FORMULA" lld coreutils >/dev/null 2>&1; then
  note "all installed"
else
  run brew install ccache "$LLVM_FORMULA" lld coreutils
fi

phase 3 "triton $TMPS_TRITON_VERSION source ($REF) in $SRC"
run mkdir -p "$CACHE"
if ! tmps_dry && [ -d "$SRC/.git" ] && [ "$(git -C "$SRC" rev-parse --abbrev-ref HEAD 2>/dev/null)" = "$LOCAL_BRANCH" ]; then
  note "reusing the checkout of an earlier run (its build resumes where it stopped)"
else
  run rm -rf "$SRC"
  if ! run git clone --depth 1 --branch "$REF" --recurse-submodules --shallow-submodules "$REPO_URL" "$SRC"; then
    [ "$REF" = "$DEFAULT_REF" ] || die "git clone of $REF failed"
    note "no tag $REF upstream: trying the release branch release/3.9.x (must still say $TMPS_TRITON_VERSION)"
    run rm -rf "$SRC"
    run git clone --depth 1 --branch release/3.9.x --recurse-submodules --shallow-submodules "$REPO_URL" "$SRC"
  fi
  run git -C "$SRC" checkout -q -b "$LOCAL_BRANCH"
fi
if ! tmps_dry; then
  grep -q "^TRITON_VERSION = \"$TMPS_TRITON_VERSION\"" "$SRC/setup.py" ||
    die "$SRC/setup.py does not build triton $TMPS_TRITON_VERSION ($(grep -m1 '^TRITON_VERSION' "$SRC/setup.py" || echo 'no TRITON_VERSION line')); set TMPS_TRITON_REF to its tag or commit"
  note "commit $(git -C "$SRC" rev-parse HEAD)"
  # PyPI's triton 3.9.0 wheels were linked against this LLVM (its libtriton says so).
  llvm=$(cat "$SRC/cmake/llvm-hash.txt" 2>/dev/null || true)
  if [ "$llvm" != "$PYPI_LLVM" ]; then
    note "warning: cmake/llvm-hash.txt is ${llvm:-missing}, PyPI's triton $TMPS_TRITON_VERSION used $PYPI_LLVM"
  fi
fi

phase 4 "build environment $CACHE/build-venv-$TAG (python/requirements.txt and the build-system requirements)"
BVENV=$CACHE/build-venv-$TAG
if tmps_dry || ! [ -x "$BVENV/bin/python" ]; then run "$VPY" -m venv "$BVENV"; fi
run "$BVENV/bin/python" -m pip install -q --upgrade pip
if ! tmps_dry; then
  "$BVENV/bin/python" - "$SRC/pyproject.toml" >"$CACHE/build-requires.txt" <<'PYEOF'
import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f).get("build-system", {}).get("requires", [])))
PYEOF
fi
run "$BVENV/bin/python" -m pip install -q -r "$SRC/python/requirements.txt" -r "$CACHE/build-requires.txt"

phase 5 "compiling triton (the long part: $EXPECT_TIME; progress every 5% or minute)"
LLVM_BIN=$(tmps_brew_prefix "$LLVM_FORMULA")/bin
BREW_BIN=$(tmps_brew_prefix)/bin
# The build environment's cmake, ninja and lit (setup.py runs them from PATH, as in upstream's
# activated venv), then Homebrew's clang and ld64.lld, as upstream's workflow puts them.
# shellcheck disable=SC2016 # "$PATH" printed as it is
if tmps_dry; then printf '+ export PATH=%s:%s:%s:"$PATH"\n' "$BVENV/bin" "$LLVM_BIN" "$BREW_BIN"; fi
export PATH="$BVENV/bin:$LLVM_BIN:$BREW_BIN:$PATH"
tmps_export TRITON_BUILD_WITH_CLANG_LLD TRUE
if [ "$O1" = 1 ]; then tmps_export TRITON_BUILD_WITH_O1 true; fi
tmps_export MAX_JOBS "$JOBS"
tmps_export NINJA_STATUS "[%f/%t, %es elapsed] "
run mkdir -p "$WHEELS"

# Everything goes to the log; the console gets ninja's progress, downloads and errors.
progress() {
  local line n total pct last_pct=-5 last_t=$SECONDS re='^\[([0-9]+)/([0-9]+)'
  exec 3>"$LOG"
  while IFS= read -r line; do
    printf '%s\n' "$line" >&3
    if [ "$VERBOSE" = 1 ]; then
      printf '%s\n' "$line"
    elif [[ $line =~ $re ]]; then
      n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
      pct=$((n * 100 / total))
      if [ $((pct / 5)) -gt $((last_pct / 5)) ] || [ $((SECONDS - last_t)) -ge 60 ]; then
        printf '    compiled %s of %s (%d%%), elapsed %s\n' "$n" "$total" "$pct" "$(elapsed)"
        last_pct=$pct last_t=$SECONDS
      fi
    else
      case $line in
        *[Dd]ownload* | *error:* | *Error* | "-- Configuring done"* | "-- Build files have been written"*)
          printf '    %s\n' "$line" ;;
      esac
    fi
  done
  exec 3>&-
}
if tmps_dry; then
  run "$BVENV/bin/python" -m pip wheel --no-build-isolation --no-deps -v -w "$WHEELS" "$SRC"
  WHEEL="$WHEELS/triton-$TMPS_TRITON_VERSION-$TAG-$TAG-macosx_<version>_arm64.whl"
else
  if ! (cd "$SRC" && "$BVENV/bin/python" -m pip wheel --no-build-isolation --no-deps -v -w "$WHEELS" .) 2>&1 | progress; then
    tail -n 40 "$LOG" >&2
    die "the triton build failed after $(elapsed) (whole log: $LOG). The checkout stays in $SRC:
    running this again resumes the build"
  fi
  WHEEL=$(find_wheel)
  [ -n "$WHEEL" ] || die "the build ended but $WHEELS has no triton-$TMPS_TRITON_VERSION-$TAG-*.whl (see $LOG)"
fi

phase 6 "the wheel"
note "$WHEEL"
if [ "$KEEP" = 0 ]; then
  note "deleting the source and build tree (--keep-source keeps it)"
  run rm -rf "$SRC"
fi
finish "$WHEEL"
step "triton $TMPS_TRITON_VERSION built in $(elapsed); later runs (scripts/demo.sh, scripts/test.sh) reuse the wheel"
