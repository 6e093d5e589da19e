#version 450
// UNARY: iattr[0] = braid_unary_op.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "unary_op.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  y[offset_of(6, i)] = unary_op(P.iattr[0], x[offset_of(0, i)]);
}
