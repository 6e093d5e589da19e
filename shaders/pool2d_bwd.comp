#version 450
// POOL2D_BWD as a gather: one invocation per input cell (n, c, h, w) adds up the gradients of the
// windows that cover it, in row-major window order (no atomics). Max: a window sends its gradient to
// its first maximum (row-major, padded cells ignored; NaN wins as in the forward scan); avg: spreads
// it over the window's non-padded cells. iattr[0] = kind (0 max, 1 avg); extra: H, W, kernel h,
// kernel w, stride h, stride w, pad h, pad w, P, Q. Operands: 0 dy NCPQ, 1 x NCHW, 6 dx NCHW.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
layout(std430, binding = 1) readonly buffer In0 { T dy[]; };
layout(std430, binding = 2) readonly buffer In1 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T dx[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 o = coords4(i);
  int h = int(o.z), w = int(o.w);
  int H = int(P.extra[0]), W = int(P.extra[1]), kh = int(P.extra[2]), kw = int(P.extra[3]);
  int sh = int(P.extra[4]), sw = int(P.extra[5]), ph = int(P.extra[6]), pw = int(P.extra[7]);
  int PP = int(P.extra[8]), QQ = int(P.extra[9]);
  bool is_max = P.iattr[0] == 0;
  // Windows p with p*sh - ph <= h < p*sh - ph + kh (a negative bound truncates toward 0, then max).
  int p0 = max(0, (h + ph - kh + sh) / sh), p1 = min(PP - 1, (h + ph) / sh);
  int q0 = max(0, (w + pw - kw + sw) / sw), q1 = min(QQ - 1, (w + pw) / sw);
  T acc = 0.0;
  for (int p = p0; p <= p1; ++p) {
    int h0 = p * sh - ph, hs = max(h0, 0), he = min(h0 + kh, H);
    if (h < h0 || h >= h0 + kh) continue;
    for (int q = q0; q <= q1; ++q) {
      int w0 = q * sw - pw, ws = max(w0, 0), we = min(w0 + kw, W);
      if (w < w0 || w >= w0 + kw || hs >= he || ws >= we) continue;
      T g = dy[at4(0, o.x, o.y, uint(p), uint(q))];
      if (is_max) {
        int ah = hs, aw = ws;
        T m = x[at4(1, o.x, o.y, uint(hs), uint(ws))];
        for (int hh = hs; hh < he; ++hh)
          for (int ww = ws; ww < we; ++ww) {
            T v = x[at4(1, o.x, o.y, uint(hh), uint(ww))];
            if (v > m || (isnan(v) && !isnan(m))) {
              m = v;
              ah = hh;
              aw = ww;
            }
          }
        if (ah == h && aw == w) acc += g;
      } else {
        acc += g / T((he - hs) * (we - ws));
      }
    }
  }
  dx[at4(6, o.x, o.y, o.z, o.w)] = acc;
}
