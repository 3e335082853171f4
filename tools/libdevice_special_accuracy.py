#!/usr/bin/env python3
"""Accuracy sweep of libdevice's special functions (compiler/mslib/erfgamma.py, bessel.py) on every float type.

    python tools/libdevice_special_accuracy.py                     # 2000 inputs per family and dtype
    python tools/libdevice_special_accuracy.py -n 20000 --seed 7 --dtypes float64

Runs the kernels of tests/triton/test_libdevice_special.py with the same input generators
(each function's domain at every magnitude, the special values) and prints per function and
dtype the largest error in ulp of the exact value (mpmath, 160 bits) and where it occurs. For
lgamma it also prints the maximum away from its negative-axis zeros (|lgamma| >= 1e-8), and for
jn/yn separately for |x| <= 30 (Miller's recurrence in double-double) and |x| > 30 (seeds from
mslib/bessel.py's Hankel expansion in double).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("TRITON_BACKEND", "mps")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "triton"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="inputs per family and dtype")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtypes", default="float64,float32,float16,bfloat16")
    args = ap.parse_args()

    import numpy as np
    import test_libdevice_special as t
    import torch
    import triton
    from triton.runtime.driver import driver
    from triton_mps.backend.driver import MPSDriver

    if not isinstance(driver.active, MPSDriver):
        driver.set_active(MPSDriver())
    dev = driver.active.get_active_torch_device()
    t.mp.prec = 160
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        rng = np.random.default_rng(args.seed)
        for kernel, names, inputs in t.FAMILIES.values():
            x = torch.from_numpy(inputs(rng, args.n)).to(dtype)
            t0 = time.time()
            got = t._run(kernel, x, len(names), dev)
            el = time.time() - t0
            xs = x.double().numpy()
            for i, name in enumerate(names):
                worst, worst_far = (0.0, None, None), (0.0, None, None)
                for j, v in enumerate(xs):
                    want = t._exact(name, float(v))
                    e = t.ulp_error(float(got[i, j]), want, dtype)
                    row = (e, float(v), float(got[i, j]))
                    worst = max(worst, row, key=lambda r: r[0])
                    if name == "lgamma" and (isinstance(want, float) or abs(want) >= 1e-8):
                        worst_far = max(worst_far, row, key=lambda r: r[0])
                extra = f"; |lgamma| >= 1e-8: {worst_far[0]:.3f} at {worst_far[1]!r}" if name == "lgamma" else ""
                print(f"{dname:9s} {name:11s} max {worst[0]:.3f} ulp at x={worst[1]!r} (got {worst[2]!r}){extra}"
                      f"  [{xs.size} inputs, kernel {el:.1f} s]")
        orders, xv = t._jn_inputs(rng, args.n)
        x = torch.from_numpy(xv).to(dtype)
        out = torch.full((2 * xv.size,), t.POISON, dtype=dtype, device=dev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t._jnyn[(triton.cdiv(xv.size, t.BLOCK),)](x.to(dev), torch.from_numpy(orders).to(dev), out, xv.size,
                                                      BLOCK=t.BLOCK)
        got = out.cpu().double().numpy().reshape(2, -1)
        xs = x.double().numpy()
        for i, name in enumerate(t.JNYN):
            near, far = (0.0, None, None), (0.0, None, None)
            for j, v in enumerate(xs):
                e = t.ulp_error(float(got[i, j]), t._exact2(name, int(orders[j]), float(v)), dtype)
                row = (e, (int(orders[j]), float(v)), float(got[i, j]))
                if math.isnan(v) or abs(v) <= 30:
                    near = max(near, row, key=lambda r: r[0])
                else:
                    far = max(far, row, key=lambda r: r[0])
            print(f"{dname:9s} {name:11s} |x| <= 30: max {near[0]:.3f} ulp at (n, x)={near[1]}; "
                  f"|x| > 30: max {far[0]:.3f} ulp at {far[1]} (got {far[2]!r})  [{xs.size} inputs]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
