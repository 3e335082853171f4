"""The OCP microscaling (MX) element formats of tl.dot_scaled (ops/dot_scaled.py), decoded exactly
to float: e2m1 (fp4) values, two per byte, and E8M0 power-of-two scales, one per byte."""

from __future__ import annotations

from .registry import entry

entry("tmps_e2m1_to_f32", (), """inline float tmps_e2m1_to_f32(uint nib) {
  // s.ee.m, bias 1: 0, 0.5, 1, 1.5, 2, 3, 4, 6
  uint e = (nib >> 1) & 3u, m = nib & 1u;
  float v = e == 0u ? (float)m * 0.5f : (float)(2u + m) * (float)(1u << e) * 0.25f;
  return (nib & 8u) != 0u ? -v : v;
}
""")

entry("tmps_e8m0_to_f32", (), """inline float tmps_e8m0_to_f32(uint s) {
  // 2^(s - 127); 0 is 2^-127 (a float subnormal), 0xff is NaN
  s &= 0xffu;
  return s == 255u ? NAN : (s == 0u ? as_type<float>(0x00400000u) : as_type<float>(s << 23));
}
""")
