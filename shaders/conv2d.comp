#version 450
// CONV2D, direct: one invocation per output element (n, k, p, q) sums over (c, r, s).
// extra: C, H, W, R, S, stride h, stride w, pad h, pad w; iattr[0] = has bias.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 2) readonly buffer In1 { T w[]; };
layout(std430, binding = 3) readonly buffer In2 { T bias[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 o = coords4(i);
  uint C = P.extra[0], H = P.extra[1], W = P.extra[2], R = P.extra[3], S = P.extra[4];
  int sh = int(P.extra[5]), sw = int(P.extra[6]), ph = int(P.extra[7]), pw = int(P.extra[8]);
  T acc = P.iattr[0] != 0 ? bias[P.off[2] + int(o.y) * P.strides[16]] : 0.0;
  for (uint c = 0; c < C; ++c)
    for (uint r = 0; r < R; ++r) {
      int h = int(o.z) * sh - ph + int(r);
      if (h < 0 || h >= int(H)) continue;
      for (uint s = 0; s < S; ++s) {
        int ww = int(o.w) * sw - pw + int(s);
        if (ww < 0 || ww >= int(W)) continue;
        acc += x[at4(0, o.x, c, uint(h), uint(ww))] * w[at4(1, o.y, c, r, s)];
      }
    }
  y[at4(6, o.x, o.y, o.z, o.w)] = acc;
}
