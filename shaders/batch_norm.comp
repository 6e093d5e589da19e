#version 450
// BATCH_NORM over channel axis 1: one workgroup per channel. extra[0] = elements per channel, the
// other axes are extra[1] dims with sizes extra[2..9], x strides extra[10..17], y strides extra[18..25].
// fattr[0] = eps, fattr[1] = momentum; iattr[0] = training, iattr[1] = number of outputs. Training:
// two-pass mean and biased variance; running stats updated in place with the unbiased variance.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 2) readonly buffer In1 { T gamma[]; };
layout(std430, binding = 3) readonly buffer In2 { T beta[]; };
layout(std430, binding = 4) buffer In3 { T rmean[]; };
layout(std430, binding = 5) buffer In4 { T rvar[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
layout(std430, binding = 8) writeonly buffer Out1 { T smean[]; };
layout(std430, binding = 9) writeonly buffer Out2 { T sinv[]; };
shared T part[256];

int offset_in(uint j, uint first) {
  int o = 0;
  for (int d = int(P.extra[1]) - 1; d >= 0; --d) {
    uint s = P.extra[2 + d];
    o += int(j % s) * int(P.extra[first + d]);
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
  int xb = P.off[0] + int(c) * P.strides[1], yb = P.off[6] + int(c) * P.strides[49];
  T eps = sattr(0), momentum = sattr(1);
  T mean, invstd;
  int rm = P.off[3] + int(c) * P.strides[24], rv = P.off[4] + int(c) * P.strides[32];
  if (P.iattr[0] != 0) {
    T s = 0.0;
    for (uint j = t; j < cnt; j += 256) s += x[xb + offset_in(j, 10)];
    mean = cnt > 0 ? block_sum(s) / T(cnt) : 0.0;
    T q = 0.0;
    for (uint j = t; j < cnt; j += 256) {
      T d = x[xb + offset_in(j, 10)] - mean;
      q += d * d;
    }
    T var = cnt > 0 ? block_sum(q) / T(cnt) : 0.0;
    invstd = 1.0 / sqrt(var + eps);
    if (t == 0) {
      T unbiased = cnt > 1 ? var * T(cnt) / T(cnt - 1) : var;
      rmean[rm] = (1.0 - momentum) * rmean[rm] + momentum * mean;
      rvar[rv] = (1.0 - momentum) * rvar[rv] + momentum * unbiased;
    }
  } else {
    mean = rmean[rm];
    invstd = 1.0 / sqrt(rvar[rv] + eps);
  }
  if (t == 0) {
    if (P.iattr[1] >= 2) smean[P.off[7] + int(c) * P.strides[56]] = mean;
    if (P.iattr[1] >= 3) sinv[P.off[8] + int(c) * P.strides[64]] = invstd;
  }
  T scale = gamma[P.off[1] + int(c) * P.strides[8]] * invstd, shift = beta[P.off[2] + int(c) * P.strides[16]];
  for (uint j = t; j < cnt; j += 256) y[yb + offset_in(j, 18)] = (x[xb + offset_in(j, 10)] - mean) * scale + shift;
}
