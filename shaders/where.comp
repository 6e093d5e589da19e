#version 450
// WHERE: out = cond != 0 ? a : b, element by element. The elements are copied as bits, never computed
// with, so one kernel serves each width: -DWIDE for 64-bit elements (two words, low first), -DFLOAT
// where cond is a float, whose sign bit alone (-0.0) does not make it nonzero (a NaN does).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#ifdef WIDE
#define W uvec2
#else
#define W uint
#endif
#ifdef FLOAT
const uint kMagnitude = 0x7fffffffu;
#else
const uint kMagnitude = 0xffffffffu;
#endif
layout(std430, binding = 1) readonly buffer In0 { W c[]; };
layout(std430, binding = 2) readonly buffer In1 { W a[]; };
layout(std430, binding = 3) readonly buffer In2 { W b[]; };
layout(std430, binding = 7) writeonly buffer Out0 { W y[]; };

bool nonzero(W v) {
#ifdef WIDE
  return (v.x | (v.y & kMagnitude)) != 0u;
#else
  return (v & kMagnitude) != 0u;
#endif
}

void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  y[offset_of(6, i)] = nonzero(c[offset_of(0, i)]) ? a[offset_of(1, i)] : b[offset_of(2, i)];
}
