#version 450
// BATCH_NORM_BWD over channel axis 1: one workgroup per channel (P.n = C; P.shape = x's shape).
// Operands: 0 dy, 1 x, 2 gamma, 3 save_mean, 4 save_invstd; 6 dx, 7 dgamma, 8 dbeta. iattr[0] =
// training, iattr[1] = number of outputs, extra[0] = elements per channel. With xhat = (x - mean) *
// invstd: dbeta = sum dy, dgamma = sum dy * xhat; training: dx = gamma * invstd * (dy - dbeta/M -
// xhat * dgamma/M), otherwise dx = gamma * invstd * dy.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T dy[]; };
layout(std430, binding = 2) readonly buffer In1 { T x[]; };
layout(std430, binding = 3) readonly buffer In2 { T gamma[]; };
layout(std430, binding = 4) readonly buffer In3 { T smean[]; };
layout(std430, binding = 5) readonly buffer In4 { T sinv[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T dx[]; };
layout(std430, binding = 8) writeonly buffer Out1 { T dgamma[]; };
layout(std430, binding = 9) writeonly buffer Out2 { T dbeta[]; };
shared T part[256];

// Offset of operand `op` for the j-th element of a channel (row-major over every axis but 1).
int offset_in(uint j, uint op) {
  int o = 0;
  for (int d = int(P.ndim) - 1; d >= 0; --d) {
    if (d == 1) continue;
    uint s = P.shape[d];
    o += int(j % s) * P.strides[op * 8 + d];
    j /= s;
  }
  return o;
}

T block_sum(T v) {
  uint t = gl_LocalInvocationID.x;
  part[t] = v;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  T r = part[0];
  barrier();
  return r;
}

void main() {
  uint c = group_id();
  if (c >= P.n) return;
  uint cnt = P.extra[0], t = gl_LocalInvocationID.x;
  int gb = P.off[0] + int(c) * P.strides[1], xb = P.off[1] + int(c) * P.strides[9];
  int ob = P.off[6] + int(c) * P.strides[49];
  T mean = smean[P.off[3] + int(c) * P.strides[24]], inv = sinv[P.off[4] + int(c) * P.strides[32]];
  T sdy = 0.0, sdyx = 0.0;
  for (uint j = t; j < cnt; j += 256) {
    T g = dy[gb + offset_in(j, 0)];
    sdy += g;
    sdyx += g * (x[xb + offset_in(j, 1)] - mean);
  }
  T dbeta_c = block_sum(sdy), dgamma_c = block_sum(sdyx) * inv;
  if (t == 0) {
    if (P.iattr[1] >= 2) dgamma[P.off[7] + int(c) * P.strides[56]] = dgamma_c;
    if (P.iattr[1] >= 3) dbeta[P.off[8] + int(c) * P.strides[64]] = dbeta_c;
  }
  T scale = gamma[P.off[2] + int(c) * P.strides[16]] * inv;
  bool training = P.iattr[0] != 0 && cnt > 0;
  T mdy = training ? dbeta_c / T(cnt) : 0.0, mdg = training ? dgamma_c / T(cnt) : 0.0;
  for (uint j = t; j < cnt; j += 256) {
    T xhat = (x[xb + offset_in(j, 1)] - mean) * inv;
    dx[ob + offset_in(j, 6)] = scale * (dy[gb + offset_in(j, 0)] - mdy - xhat * mdg);
  }
}
