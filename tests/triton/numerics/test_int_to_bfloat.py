"""32/64-bit integers converted to bfloat16 round once, to nearest even (Triton's sitofp/uitofp).

Found by the differential fuzzer (tests/triton/fuzz): the conversion went through float rounded
to nearest, so an integer that float rounds onto a bfloat tie was rounded twice
(int32 -121896961 gave -121634816 instead of -122159104).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def to_bf16(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.bfloat16), mask=mask)


def rtne_bf16(v: int) -> float:
    """The integer rounded to bfloat16's 8 significant bits, ties to even (exact, in Python)."""
    m = abs(v)
    shift = m.bit_length() - 8
    if shift > 0:
        q, r = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        q += r > half or (r == half and q & 1)
        m = q << shift
    return float(m) if v >= 0 else -float(m)


CASES = {
    torch.int32: [0, 1, -1, 2**24 + 2**16 + 1, -(2**24 + 2**16 + 1), 2**24 + 2**16, 2**24 + 3 * 2**16,
                  -121896961, 962592767, 255, 257, 2**31 - 1, -(2**31)],
    torch.int64: [2**40 + 2**32 + 1, -(2**40 + 2**32 + 1), 2**40 + 2**32, 2**62 + 2**54 + 1, 2**63 - 1, -(2**63),
                  3, -(2**53) - 1],
    torch.uint32: [2**32 - 1, 2**31 + 2**23 + 1, 2**31 + 2**23, 49151999, 45219841, 7],
}


@pytest.mark.parametrize("dtype", list(CASES), ids=str)
def test_int_to_bfloat16_rounds_once(mps_driver, dtype):
    values = CASES[dtype]
    x = torch.tensor(np.array(values, dtype={torch.int32: np.int32, torch.int64: np.int64,
                                             torch.uint32: np.uint32}[dtype]))
    y = torch.full((len(values),), float("nan"), dtype=torch.bfloat16)
    to_bf16[(1,)](x, y, len(values), BLOCK=16)
    assert y.float().tolist() == [rtne_bf16(v) for v in values]
