#version 450
// FUSED_ELEMENTWISE (graph mode's fused chains; abi/braid_backend.h): the chain's program run for each
// element, its registers in the invocation. extra[0] = instructions n, extra[1] = inputs k,
// extra[2 + j] = instruction j (kind | op << 2 | a << 6 | b << 12), checked by the host side
// (kernels.cpp); scalars are the attributes (sattr). One compiled shader interprets every program.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "binary_op.glsl"
#include "unary_op.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x0[]; };
layout(std430, binding = 2) readonly buffer In1 { T x1[]; };
layout(std430, binding = 3) readonly buffer In2 { T x2[]; };
layout(std430, binding = 4) readonly buffer In3 { T x3[]; };
layout(std430, binding = 5) readonly buffer In4 { T x4[]; };
layout(std430, binding = 6) readonly buffer In5 { T x5[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  T r[27];
  uint k = P.extra[1], n = P.extra[0];
  r[0] = x0[offset_of(0, i)];
  if (k > 1u) r[1] = x1[offset_of(1, i)];
  if (k > 2u) r[2] = x2[offset_of(2, i)];
  if (k > 3u) r[3] = x3[offset_of(3, i)];
  if (k > 4u) r[4] = x4[offset_of(4, i)];
  if (k > 5u) r[5] = x5[offset_of(5, i)];
  for (uint j = 0u; j < n; ++j) {
    uint ins = P.extra[2u + j];
    uint kind = ins & 3u, a = (ins >> 6) & 63u, b = (ins >> 12) & 63u;
    int op = int((ins >> 2) & 15u);
    T v;
    if (kind == 0u) v = unary_op(op, r[a]);
    else if (kind == 1u) v = binary_op(op, r[a], r[b]);
    else if (kind == 2u) v = binary_op(op, r[a], sattr(int(b)));
    else v = binary_op(op, sattr(int(b)), r[a]);
    r[k + j] = v;
  }
  y[offset_of(6, i)] = r[k + n - 1u];
}
