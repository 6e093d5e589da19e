#version 450
// FILL: out[i] = value, float32 / float64 (-DF64) / int32 (-DINT).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#ifdef INT
layout(std430, binding = 7) writeonly buffer Out0 { int y[]; };
#else
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
#endif
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
#ifdef INT
  y[offset_of(6, i)] = int(sattr(0));
#else
  y[offset_of(6, i)] = sattr(0);
#endif
}
