#version 450
// ARANGE: out[k] = start + k * step.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  y[offset_of(6, i)] = sattr(0) + T(i) * sattr(1);
}
