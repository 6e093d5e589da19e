#version 450
// CONV2D_BWD_WEIGHT for few taps and long sums (kernels.cpp picks it over gemm.comp's MODE 3 when dw
// has too few C R S columns to keep more than one workgroup busy, e.g. a first layer with C = 1): one
// workgroup per dw element (k, c, r, s) sums dy[n, k, p, q] * x[n, c, p*sh - ph + r, q*sw - pw + s]
// over (n, p, q), then a shared-memory tree. P.shape = dw's
// KCRS. extra: N, P, Q, H, W, stride h, stride w, pad h, pad w. Operands: 0 dy NKPQ, 1 x NCHW, 6 dw.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T dy[]; };
layout(std430, binding = 2) readonly buffer In1 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T dw[]; };
shared T part[256];
void main() {
  uint g = group_id();
  if (g >= P.n) return;
  uvec4 o = coords4(g);  // k, c, r, s
  uint N = P.extra[0], PP = P.extra[1], QQ = P.extra[2];
  int H = int(P.extra[3]), W = int(P.extra[4]);
  int sh = int(P.extra[5]), sw = int(P.extra[6]), ph = int(P.extra[7]), pw = int(P.extra[8]);
  uint t = gl_LocalInvocationID.x;
  T acc = 0.0;
  // Each invocation keeps its (p, q) positions and walks n (one division per position, not per term).
  uint pqn = PP * QQ;
  for (uint pq = t; pq < pqn; pq += 256) {
    uint p = pq / QQ, q = pq - p * QQ;
    int h = int(p) * sh - ph + int(o.z), w = int(q) * sw - pw + int(o.w);
    if (h < 0 || h >= H || w < 0 || w >= W) continue;
    int dyo = at4(0, 0, o.x, p, q), xo = at4(1, 0, o.y, uint(h), uint(w));
    for (uint n = 0; n < N; ++n) acc += dy[dyo + int(n) * P.strides[0]] * x[xo + int(n) * P.strides[8]];
  }
  part[t] = acc;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  if (t == 0) dw[at4(6, o.x, o.y, o.z, o.w)] = part[0];
}
