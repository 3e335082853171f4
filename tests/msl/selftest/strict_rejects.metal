// Must FAIL the strict check (-DTMPS_SIM_STRICT) with exactly 5 errors (lines 7-11);
// in normal mode only the 2 writes through `constant` fail.
#include <metal_stdlib>
using namespace metal;
kernel void bad(device float* a [[buffer(0)]], constant float& c [[buffer(1)]], constant float* cp [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  threadgroup float tg[4];
  float* p = a;              // device -> thread: reject
  c = 1.0f;                  // write through constant: reject
  cp[0] = 2.0f;              // reject
  device float* q = tg;      // threadgroup -> device: reject
  double d = 1.0;            // reject (poisoned)
  a[i] = *p + (float)d + q[0];
}
