#version 450
// SOFTMAX_CE: loss[n] = logsumexp(logits[n, :]) - logits[n, label[n]], one workgroup per row, formed
// as log(sum exp(x - m)) - (x[label] - m) so that logits sharing a large offset m do not cancel.
// extra[0] = K, extra[1] = logits stride along K, extra[2] = 1 for int64 labels (read as (low, high)).
// A label outside [0, K) sets the error word (binding 10), which the queue turns into BRAID_ERR_KERNEL.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 2) readonly buffer In1 { int labels[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
layout(std430, binding = 10) buffer Err { uint err; };
shared T part[256];

void main() {
  uint n = group_id();
  if (n >= P.n) return;
  uint K = P.extra[0];
  int sk = int(P.extra[1]);
  int xb = P.off[0] + int(n) * P.strides[0];
  uint t = gl_LocalInvocationID.x;
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
  if (t != 0) return;
  int li = P.off[1] + int(n) * P.strides[8] * (P.extra[2] != 0u ? 2 : 1);
  int label = labels[li];
  bool bad = label < 0 || label >= int(K) || (P.extra[2] != 0u && labels[li + 1] != 0);
  if (bad) {
    atomicOr(err, 1u);
    y[P.off[6] + int(n) * P.strides[48]] = 0.0;
    return;
  }
  y[P.off[6] + int(n) * P.strides[48]] = log_T(part[0]) - (x[xb + label * sk] - m);
}
