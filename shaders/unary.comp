#version 450
// UNARY: iattr[0] = braid_unary_op.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  T v = x[offset_of(0, i)];
  T r;
  switch (P.iattr[0]) {
    case 0: r = -v; break;
    case 1: r = abs(v); break;
    case 2: r = exp_T(v); break;
    case 3: r = log_T(v); break;
    case 4: r = sqrt(v); break;
    case 5: r = v < 0.0 ? 0.0 : v; break;
    case 6: r = sigmoid_T(v); break;
    case 7: r = tanh_T(v); break;
    case 8: r = v * v; break;
    default: r = isnan(v) ? v : sign(v); break;
  }
  y[offset_of(6, i)] = r;
}
