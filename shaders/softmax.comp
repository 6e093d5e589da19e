#version 450
// SOFTMAX / LOG-SOFTMAX along one axis: one workgroup per row. extra[0] = axis length, extra[1] and
// extra[2] = input and output strides along it, iattr[1] = log. Max, then sum of exp, then write.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
shared T part[256];

void main() {
  uint o = group_id();
  if (o >= P.n) return;
  int xb = int(offset_of(0, o)), yb = int(offset_of(6, o));
  uint len = P.extra[0];
  int sx = int(P.extra[1]), sy = int(P.extra[2]);
  uint t = gl_LocalInvocationID.x;
  T m = neg_inf_T();
  for (uint k = t; k < len; k += 256) m = max(m, x[xb + int(k) * sx]);
  part[t] = m;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = max(part[t], part[t + s]);
    barrier();
  }
  m = part[0];
  barrier();
  T sum = 0.0;
  for (uint k = t; k < len; k += 256) sum += exp_T(x[xb + int(k) * sx] - m);
  part[t] = sum;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  sum = part[0];
  bool lg = P.iattr[1] != 0;
  T ls = log_T(sum);
  for (uint k = t; k < len; k += 256) {
    T v = x[xb + int(k) * sx] - m;
    y[yb + int(k) * sy] = lg ? v - ls : exp_T(v) / sum;
  }
}
