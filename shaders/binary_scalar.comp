#version 450
// BINARY_SCALAR: out = op(in0, s) or op(s, in0) with iattr[1] = reverse; s = fattr[0].
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "binary_op.glsl"
layout(std430, binding = 1) readonly buffer In0 { T a[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  T v = a[offset_of(0, i)], s = sattr(0);
  y[offset_of(6, i)] = P.iattr[1] != 0 ? binary_op(P.iattr[0], s, v) : binary_op(P.iattr[0], v, s);
}
