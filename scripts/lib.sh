# shellcheck shell=bash
# Shared by scripts/demo.sh, scripts/test.sh and scripts/build-triton-macos.sh (sourced, never run).
# Written for bash 3.2 too (macOS's /bin/bash): no associative arrays, no empty "${array[@]}".
#
# TMPS_DRY_RUN=1      print each command that would change something ("+ command") instead of
#                     running it; read-only queries (versions, free disk, files) still run.
# TMPS_PRETEND_OS=X   take X (Darwin or Linux) instead of `uname -s`: with TMPS_DRY_RUN=1 the macOS
#                     steps can be checked on Linux (tests/repo/test_scripts_macos.py).
# TMPS_PRETEND_MISSING=a,b  (dry runs only) act as if these were absent: gtest, brew, xcode.
# TMPS_VENV=DIR       the virtual environment (default .venv in the checkout).
# TMPS_TRITON_CACHE=DIR  where the triton wheel built on a Mac is kept (default below).

TMPS_TRITON_VERSION=3.9.0
# Python versions triton 3.9.0 supports (its wheel's Requires-Python: >=3.11,<3.16).
TMPS_TRITON_PY_MIN=11
TMPS_TRITON_PY_MAX=15

tmps_os() { printf '%s\n' "${TMPS_PRETEND_OS:-$(uname -s)}"; }
tmps_on_mac() { [ "$(tmps_os)" = Darwin ]; }
tmps_dry() { [ "${TMPS_DRY_RUN:-0}" = 1 ]; }
step() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf '\nerror: %s\n' "$*" >&2; exit 1; }

# In a dry run, whether NAME is in TMPS_PRETEND_MISSING (never outside a dry run).
tmps_pretend_missing() {
  tmps_dry || return 1
  case ",${TMPS_PRETEND_MISSING:-}," in *",$1,"*) return 0 ;; esac
  return 1
}

# Words as a shell would need them (plain words unquoted, the rest in single quotes).
tmps_quote() {
  local a out=""
  for a in "$@"; do
    case $a in
      "" | *[!A-Za-z0-9_./:=@,+%-]*) a="'${a//\'/\'\\\'\'}'" ;;
    esac
    out="$out $a"
  done
  printf '%s' "${out# }"
}

# Run a command, or in a dry run print it.
run() {
  if tmps_dry; then
    printf '+ %s\n' "$(tmps_quote "$@")"
  else
    "$@"
  fi
}

# One of our own scripts: printed, then always run (it honours TMPS_DRY_RUN itself).
run_script() {
  printf '+ %s\n' "$(tmps_quote "$@")"
  "$@"
}

# export NAME=VALUE (printed in a dry run, exported in both).
tmps_export() {
  if tmps_dry; then printf '+ export %s\n' "$(tmps_quote "$1=$2")"; fi
  export "$1=$2"
}

# Logical CPUs: sysctl on macOS, nproc elsewhere (as before).
tmps_ncpu() {
  if tmps_on_mac && sysctl -n hw.ncpu >/dev/null 2>&1; then
    sysctl -n hw.ncpu
  elif command -v nproc >/dev/null 2>&1; then
    nproc
  else
    getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2
  fi
}

# Physical memory in GB (0 when unknown).
tmps_mem_gb() {
  local bytes
  if bytes=$(sysctl -n hw.memsize 2>/dev/null) && [ -n "$bytes" ]; then
    echo $((bytes / 1073741824))
  elif [ -r /proc/meminfo ]; then
    awk '/^MemTotal:/ { printf "%d\n", $2 / 1048576 }' /proc/meminfo
  else
    echo 0
  fi
}

# Free GB on the file system that holds $1 (or its nearest existing parent).
tmps_free_gb() {
  local dir=$1
  while [ ! -d "$dir" ] && [ "$dir" != / ] && [ "$dir" != . ]; do dir=$(dirname "$dir"); done
  df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { printf "%d\n", $4 / 1048576 }'
}

# The wheel cache of scripts/build-triton-macos.sh (python/triton_mps/check.py uses the same rule).
tmps_triton_cache() {
  if [ -n "${TMPS_TRITON_CACHE:-}" ]; then
    printf '%s\n' "$TMPS_TRITON_CACHE"
    return
  fi
  local base
  if [ -n "${XDG_CACHE_HOME:-}" ]; then
    base=$XDG_CACHE_HOME
  elif tmps_on_mac; then
    base=$HOME/Library/Caches
  else
    base=$HOME/.cache
  fi
  printf '%s\n' "$base/triton-mps/triton-$TMPS_TRITON_VERSION"
}

# Whether the interpreter $1 is one triton 3.9.0 supports.
tmps_python_ok() {
  "$1" -c "import sys; sys.exit(not ((3, $TMPS_TRITON_PY_MIN) <= sys.version_info[:2] <= (3, $TMPS_TRITON_PY_MAX)))" \
    2>/dev/null
}

tmps_python_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# The wheel tag of the interpreter $1, e.g. cp312.
tmps_python_tag() { "$1" -c 'import sys; print("cp%d%d" % sys.version_info[:2])'; }

# The version of triton installed for the interpreter $1 ("" when none).
tmps_triton_installed() {
  "$1" -c 'import importlib.metadata as m; print(m.version("triton"))' 2>/dev/null || true
}

# A Python for a Mac: $PYTHON if set (it must be supported), else the first supported of
# python3.12, python3.13, python3.11, python3.14, python3 on PATH; prints "" when none.
tmps_pick_python() {
  local c
  if [ -n "${PYTHON:-}" ]; then
    tmps_python_ok "$PYTHON" && command -v "$PYTHON"
    return 0
  fi
  for c in python3.12 python3.13 python3.11 python3.14 python3.15 python3; do
    if command -v "$c" >/dev/null 2>&1 && tmps_python_ok "$c"; then
      command -v "$c"
      return 0
    fi
  done
}

# Homebrew's prefix; in a dry run without brew, the default one on Apple silicon.
tmps_brew_prefix() {
  if ! tmps_pretend_missing brew && command -v brew >/dev/null 2>&1; then
    brew --prefix "$@"
  elif [ $# -gt 0 ]; then
    printf '/opt/homebrew/opt/%s\n' "$1"
  else
    printf '/opt/homebrew\n'
  fi
}

# What every Mac path needs first: the Command Line Tools (clang, git, the macOS SDK) and Homebrew.
tmps_mac_prereqs() {
  [ "${TMPS_MAC_PREREQS_CHECKED:-0}" = 1 ] && return 0
  if tmps_pretend_missing xcode || ! xcode-select -p >/dev/null 2>&1; then
    if tmps_dry && ! tmps_pretend_missing xcode; then
      note "(dry run: xcode-select not found here; on a Mac the Command Line Tools are checked)"
    else
      die "the Xcode Command Line Tools are missing (clang, git and the macOS SDK): run
    xcode-select --install
then run this command again"
    fi
  fi
  if tmps_pretend_missing brew || ! command -v brew >/dev/null 2>&1; then
    if tmps_dry && ! tmps_pretend_missing brew; then
      note "(dry run: brew not found here; assuming Homebrew at /opt/homebrew)"
    else
      die "Homebrew is needed (for the tools that build triton and for googletest): install it from
    https://brew.sh
then run this command again"
    fi
  fi
  export TMPS_MAC_PREREQS_CHECKED=1  # our scripts called from here need not say it again
}

# A supported Python on a Mac: picked from PATH, else Homebrew's python@3.12 (installed if needed).
tmps_mac_python() {
  local py
  py=$(tmps_pick_python)
  if [ -n "$py" ]; then
    printf '%s\n' "$py"
    return
  fi
  [ -z "${PYTHON:-}" ] || die "PYTHON=$PYTHON is not a Python 3.$TMPS_TRITON_PY_MIN-3.$TMPS_TRITON_PY_MAX (triton $TMPS_TRITON_VERSION needs one)"
  step "no Python 3.$TMPS_TRITON_PY_MIN-3.$TMPS_TRITON_PY_MAX found (triton $TMPS_TRITON_VERSION needs one): installing Homebrew's python@3.12" >&2
  run brew install python@3.12 >&2
  printf '%s\n' "$(tmps_brew_prefix python@3.12)/bin/python3.12"
}

# On a Mac, an existing virtual environment must have a Python triton supports.
tmps_mac_check_venv() {
  local venv=$1 v
  [ -x "$venv/bin/python" ] || return 0
  tmps_python_ok "$venv/bin/python" && return 0
  v=$(tmps_python_version "$venv/bin/python")
  die "$venv has Python ${v:-?}; triton $TMPS_TRITON_VERSION needs 3.$TMPS_TRITON_PY_MIN-3.$TMPS_TRITON_PY_MAX. Remove it
    rm -rf $venv
and run this command again (PYTHON=/path/to/python3.12 picks the interpreter)"
}

# On a Mac: triton 3.9.0 in the virtual environment, from the environment itself, a wheel built
# before, or a build from source (scripts/build-triton-macos.sh; once per Python version).
tmps_mac_ensure_triton() {
  local venv=$1 have
  have=$(tmps_triton_installed "$venv/bin/python")
  if [ "${have%%+*}" = "$TMPS_TRITON_VERSION" ]; then
    step "triton $have is installed in $venv: using it"
    return
  fi
  [ -z "$have" ] || note "triton $have in $venv is not $TMPS_TRITON_VERSION: it will be replaced"
  step "triton $TMPS_TRITON_VERSION: PyPI has no macOS wheel; using the wheel built before, else building it from source once"
  run_script bash scripts/build-triton-macos.sh --python "$venv/bin/python" --install
}
