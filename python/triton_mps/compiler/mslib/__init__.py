"""The MSL helper library: program-scope MSL functions a kernel calls (emitted once per file, on
first use, after the entries they call), registered in one registry (registry.py).

Families: core.py (software binary64: IEEE arithmetic on `ulong` bits), dd.py (double-double),
explog.py, trig.py, hyperbolic.py, roots.py, erfgamma.py, bessel.py, misc.py (fp64 math),
rounding.py (directed rounding, fp32 and fp64), fp32.py (float functions Metal lacks), mx.py
(tl.dot_scaled's e2m1 values and E8M0 scales), fp8.py (the fp8 formats: helpers made per format),
macros.py (the guarded MSL 3.2 macros: TMPS_DEVICE_FENCE, TMPS_COHERENT).
consts.py holds the exact constants and text builders they share; fp64.py is what lowerings call
for binary64 (call, apply, use, narrow, literal).
Importing the package registers every family, so the library never depends on import order.
"""

from . import bessel, core, dd, erfgamma, explog, fp32, hyperbolic, macros, misc, mx, roots, rounding, trig  # noqa: F401
from .registry import check

check()
