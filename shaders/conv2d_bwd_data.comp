#version 450
// CONV2D_BWD_DATA, direct gather: one invocation per dx element (n, c, h, w) sums dy[n, k, p, q] *
// w[k, c, r, s] over the (k, r, s) with h = p*sh - ph + r, w = q*sw - pw + s. extra: K, P, Q, R, S,
// stride h, stride w, pad h, pad w. Operands: 0 dy NKPQ, 1 w KCRS, 6 dx NCHW.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
layout(std430, binding = 1) readonly buffer In0 { T dy[]; };
layout(std430, binding = 2) readonly buffer In1 { T wt[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T dx[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 o = coords4(i);
  uint K = P.extra[0];
  int PP = int(P.extra[1]), QQ = int(P.extra[2]), R = int(P.extra[3]), S = int(P.extra[4]);
  int sh = int(P.extra[5]), sw = int(P.extra[6]), ph = int(P.extra[7]), pw = int(P.extra[8]);
  T acc = 0.0;
  for (uint k = 0; k < K; ++k)
    for (int r = 0; r < R; ++r) {
      int ph_ = int(o.z) + ph - r;  // = p * sh
      if (ph_ < 0 || ph_ % sh != 0) continue;
      int p = ph_ / sh;
      if (p >= PP) continue;
      for (int s = 0; s < S; ++s) {
        int qw = int(o.w) + pw - s;
        if (qw < 0 || qw % sw != 0) continue;
        int q = qw / sw;
        if (q >= QQ) continue;
        acc += dy[at4(0, o.x, k, uint(p), uint(q))] * wt[at4(1, k, o.y, uint(r), uint(s))];
      }
    }
  dx[at4(6, o.x, o.y, o.z, o.w)] = acc;
}
