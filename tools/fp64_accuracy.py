#!/usr/bin/env python3
"""Accuracy sweep of the software float64 math functions of compiler/mslib/ (explog.py,
trig.py, hyperbolic.py, roots.py, erfgamma.py, misc.py).

    python tools/fp64_accuracy.py                 # 4000 inputs per function, seed 1
    python tools/fp64_accuracy.py -n 20000 --seed 7
    python tools/fp64_accuracy.py -n 20000 --record   # + tools/supported_ops/fp64_accuracy.json

Runs the kernels of tests/triton/test_fp64_math_ext.py and test_fp64_math_ext2.py (every
function through libdevice on float64) on the simulator / the Mac, with the same input generators
(each function's interesting ranges, every magnitude, specials), and prints per function the
largest error in ulp against mpmath at 200 bits, where it occurs, and how many inputs were
compared (special values are compared bit for bit with numpy / the IEEE rules and count as 0 ulp
when equal; the exact functions of test_fp64_math_ext2 (remainder, fdim, nextafter, ldexp, ...)
are compared bit for bit, 0 when all match). Exit status 1 when a function exceeds its bound in
its test (ULP). `--record` writes the maxima to
tools/supported_ops/fp64_accuracy.json, which `tools/supported_ops/generate.py write` renders
into docs/supported-ops.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_BACKEND", "mps")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "triton"))
RECORD = ROOT / "tools" / "supported_ops" / "fp64_accuracy.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=4000, help="inputs per function")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", action="store_true", help=f"write the maxima to {RECORD.relative_to(ROOT)}")
    args = ap.parse_args()

    import mpmath
    import numpy as np
    import test_fp64_math_ext as t
    from triton.runtime.driver import driver
    from triton_mps.backend.driver import MPSDriver

    if not isinstance(driver.active, MPSDriver):
        driver.set_active(MPSDriver())
    mpmath.mp.prec = 200
    t0 = time.time()
    x, y, got = t.run_all(driver.active, np.random.default_rng(args.seed), args.n)
    print(f"kernel: {len(t.FUNCS)} functions x {args.n} inputs in {time.time() - t0:.1f} s")
    bad = 0
    record = {"command": f"python tools/fp64_accuracy.py -n {args.n} --seed {args.seed}", "inputs_per_function": args.n,
              "device": str(driver.active.config["device"]), "functions": {}}
    for i, name in enumerate(t.FUNCS):
        yy = y if name in ("pow", "atan2") else np.zeros_like(y)
        errs = t.errors(name, x[i], yy, got[i])
        err, at, at_y, g = max(errs, key=lambda e: e[0])
        over = err > t.ULP[name]
        bad += over
        where = f"x={at!r}" + (f" y={at_y!r}" if name in ("pow", "atan2") else "")
        record["functions"][name] = {"max_ulp": round(err, 3), "at": where.replace("np.float64(", "").replace(")", ""),
                                     "compared": len(errs)}
        print(f"{name:6s} max {err:6.3f} ulp (bound {t.ULP[name]}) over {len(errs)} inputs, at {where}"
              + ("  OVER" if over else ""))
    import test_fp64_math_ext2 as t2

    t0 = time.time()
    ins, res = t2.run_all(driver.active, np.random.default_rng(args.seed), args.n)
    print(f"kernel: {len(t2.FUNCS)} functions x {args.n} inputs in {time.time() - t0:.1f} s")
    for name in t2.FUNCS:
        errs = t2.errors(name, ins[name], res[name])
        err, a, g = max(errs, key=lambda e: e[0])
        over = err > t2.ULP[name]
        bad += over
        where = t2.describe(name, a) if err > 0 or name not in t2.EXACT else "bit-exact everywhere"
        record["functions"][name] = {"max_ulp": round(err, 3), "at": where.replace("np.float64(", "").replace(")", ""),
                                     "compared": len(errs)}
        print(f"{name:9s} max {err:6.3f} ulp (bound {t2.ULP[name]}) over {len(errs)} inputs, at {where}"
              + ("  OVER" if over else ""))
    if args.record:
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {RECORD.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
