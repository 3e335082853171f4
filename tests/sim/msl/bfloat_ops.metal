// bfloat arithmetic: y = a * x + y on bfloat4 vectors (computed in float, rounded to bfloat
// once per element, round-to-nearest-even), plus a scalar half path and a conversion check.
//
// Bindings:  buffer(0) const device bfloat4* x   n/4 bfloat4
//            buffer(1) device bfloat4* y         n/4 bfloat4 (in/out)
//            buffer(2) device half* h            n/4 halves: h[i] = half(sum of x[i]) * 0.5
//            buffer(3) device uint* bits         n/4 uints: as_type<ushort>(bfloat(1 + x[i].x / 256))
//            buffer(4) constant float& a
// Dispatch:  1-D, n/4 threads (any threadgroup size).
// Expected:  y[i][c] = bfloat(a * float(x[i][c]) + float(y[i][c])) with a single rounding;
//            e.g. a = 2, x = 1.5, y = 0.0078125 -> 3.0 (3.0078125 is a tie between 3.0 and
//            3.015625 in bfloat; round-to-nearest-even gives 3.0).
//            h[i] = half(float(x[i].x + x[i].y + x[i].z + x[i].w)) * 0.5 in half arithmetic.
//            bits[i] = bit pattern of bfloat(1 + float(x[i].x) / 256), e.g. x = 1 -> 0x3f80 (tie to even).
#include <metal_stdlib>
using namespace metal;

kernel void bfloat_axpy(const device bfloat4* x [[buffer(0)]],
                        device bfloat4* y [[buffer(1)]],
                        device half* h [[buffer(2)]],
                        device uint* bits [[buffer(3)]],
                        constant float& a [[buffer(4)]],
                        uint i [[thread_position_in_grid]]) {
  const float4 xf = float4(x[i]);
  const float4 yf = float4(y[i]);
  y[i] = bfloat4(fma(float4(a), xf, yf));

  half s = half(xf.x + xf.y + xf.z + xf.w);
  h[i] = s * half(0.5f);

  bfloat one = bfloat(1.0f + xf.x / 256.0f);
  bits[i] = as_type<ushort>(one);
}
