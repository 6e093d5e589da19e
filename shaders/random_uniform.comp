#version 450
// RANDOM_UNIFORM: low + (high - low) * u, u = (w + 0.5) 2^-32, computed in double (needs shaderFloat64)
// and rounded to float, so the bits match the CPU backend. fattr is too narrow for the bounds: they
// come as doubles in extra[4..7] (low, high as two words each).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "philox.glsl"
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  double lo = packDouble2x32(uvec2(P.extra[4], P.extra[5])), hi = packDouble2x32(uvec2(P.extra[6], P.extra[7]));
  double u = (double(philox_word(i)) + 0.5LF) * (1.0LF / 4294967296.0LF);
  precise double v = lo + (hi - lo) * u;  // unfused, as the CPU backend (bit-identical draws)
  y[offset_of(6, i)] = T(v);
}
