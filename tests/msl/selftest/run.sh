#!/bin/sh
# Self-test of the metal_stdlib shim: unit checks, execution of the test kernels under a mock
# runtime, and normal/strict compile checks of every tests/msl/*.metal file.
# Usage: tests/msl/selftest/run.sh [zig]   (build files go to ${OUT:-/tmp/shim-selftest})
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
MSL=$(dirname "$HERE")
INC=$(cd "$MSL/../../csrc/sim/include" && pwd)
ZIG=${1:-${TRITON_MPS_ZIG:-zig}}
OUT=${OUT:-/tmp/shim-selftest}
mkdir -p "$OUT"
FL="-nostdinc -nostdinc++ -fno-exceptions -fno-rtti -Xclang -ffloat16-excess-precision=none -Xclang -fbfloat16-excess-precision=none -std=c++17 -I $INC -x c++"
"$ZIG" c++ -shared -fPIC -O2 -g0 $FL "$HERE/shim_selftest.cpp" -o "$OUT/shim_selftest.so"
python3 -c "import ctypes,sys; sys.exit(ctypes.CDLL('$OUT/shim_selftest.so').run_all())"
for k in reduce_sum softmax_half4 simdgroup_matmul bfloat_ops scan_shuffle; do
  python3 "$HERE/mini_frontend.py" "$MSL/$k.metal" --bare > "$OUT/bare_$k.cpp"
done
"$ZIG" c++ -shared -fPIC -O2 -g0 $FL -I "$OUT" "$HERE/kernel_runner.cpp" -o "$OUT/kernel_runner.so"
python3 -c "import ctypes,sys; sys.exit(ctypes.CDLL('$OUT/kernel_runner.so').run_kernels())"
for f in "$MSL"/*.metal; do
  b=$(basename "$f" .metal)
  python3 "$HERE/mini_frontend.py" "$f" > "$OUT/$b.cpp"
  "$ZIG" c++ -c -fPIC -O2 -g0 $FL "$OUT/$b.cpp" -o "$OUT/$b.o"
  "$ZIG" clang -fsyntax-only $FL -DTMPS_SIM_STRICT "$OUT/$b.cpp"
  echo "compiles (normal + strict): $b.metal"
done
python3 "$HERE/mini_frontend.py" "$HERE/strict_rejects.metal" > "$OUT/strict_rejects.cpp"
n=$("$ZIG" clang -fsyntax-only $FL -DTMPS_SIM_STRICT "$OUT/strict_rejects.cpp" 2>&1 | grep -c 'error:' || true)
[ "$n" = 5 ] || { echo "strict_rejects.metal: expected 5 strict errors, got $n"; exit 1; }
echo "strict check rejects the 5 errors in strict_rejects.metal"
echo "shim self-test passed"
