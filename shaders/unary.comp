#version 450
// UNARY: iattr[0] = braid_unary_op.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, binding = 1) readonly buffer In0 { float x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { float y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  float v = x[offset_of(0, i)];
  float r;
  switch (P.iattr[0]) {
    case 0: r = -v; break;
    case 1: r = abs(v); break;
    case 2: r = exp(v); break;
    case 3: r = log(v); break;
    case 4: r = sqrt(v); break;
    case 5: r = v < 0.0 ? 0.0 : v; break;
    case 6: r = v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); break;
    case 7: { float e = exp(-2.0 * abs(v)); r = sign(v) * (1.0 - e) / (1.0 + e); break; }
    case 8: r = v * v; break;
    default: r = isnan(v) ? v : sign(v); break;
  }
  y[offset_of(6, i)] = r;
}
