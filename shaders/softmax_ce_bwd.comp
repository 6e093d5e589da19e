#version 450
// SOFTMAX_CE_BWD: dlogits[n, k] = (softmax(logits[n, :])[k] - (k == label[n])) * dloss[n], one
// workgroup per row. extra[0] = K, extra[2] = 1 for int64 labels (read as (low, high)). A label outside
// [0, K) sets the error word (binding 10) → BRAID_ERR_KERNEL, and that row is written as zeros.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 2) readonly buffer In1 { int labels[]; };
layout(std430, binding = 3) readonly buffer In2 { T dloss[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
layout(std430, binding = 10) buffer Err { uint err; };
shared T part[256];

void main() {
  uint n = group_id();
  if (n >= P.n) return;
  uint K = P.extra[0];
  int sk = P.strides[1], ok = P.strides[49];
  int xb = P.off[0] + int(n) * P.strides[0], yb = P.off[6] + int(n) * P.strides[48];
  uint t = gl_LocalInvocationID.x;
  int li = P.off[1] + int(n) * P.strides[8] * (P.extra[2] != 0u ? 2 : 1);
  int label = labels[li];
  bool bad = label < 0 || label >= int(K) || (P.extra[2] != 0u && labels[li + 1] != 0);
  if (bad) {  // uniform across the workgroup, so the early return skips no barrier another thread reaches
    if (t == 0) atomicOr(err, 1u);
    for (uint k = t; k < K; k += 256) y[yb + int(k) * ok] = 0.0;
    return;
  }
  T m = neg_inf_T();
  for (uint k = t; k < K; k += 256) m = max(m, x[xb + int(k) * sk]);
  part[t] = m;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = max(part[t], part[t + s]);
    barrier();
  }
  m = part[0];
  barrier();
  T sum = 0.0;
  for (uint k = t; k < K; k += 256) sum += exp_T(x[xb + int(k) * sk] - m);
  part[t] = sum;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  T d = dloss[P.off[2] + int(n) * P.strides[16]];
  T f = d / part[0];
  for (uint k = t; k < K; k += 256) {
    T v = exp_T(x[xb + int(k) * sk] - m) * f;
    y[yb + int(k) * ok] = int(k) == label ? v - d : v;
  }
}
