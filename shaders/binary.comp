#version 450
// BINARY: out = op(in0, in1); broadcast axes have stride 0. iattr[0] = braid_binary_op.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "binary_op.glsl"
layout(std430, binding = 1) readonly buffer In0 { T a[]; };
layout(std430, binding = 2) readonly buffer In1 { T b[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  y[offset_of(6, i)] = binary_op(P.iattr[0], a[offset_of(0, i)], b[offset_of(1, i)]);
}
