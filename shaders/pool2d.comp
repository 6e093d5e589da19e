#version 450
// POOL2D: one invocation per output element. iattr[0] = kind (0 max, 1 avg); extra: H, W, kernel h,
// kernel w, stride h, stride w, pad h, pad w. Max ignores padded cells; avg divides by the number of
// non-padded cells.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 o = coords4(i);
  int H = int(P.extra[0]), W = int(P.extra[1]), kh = int(P.extra[2]), kw = int(P.extra[3]);
  int sh = int(P.extra[4]), sw = int(P.extra[5]), ph = int(P.extra[6]), pw = int(P.extra[7]);
  bool is_max = P.iattr[0] == 0;
  T acc = is_max ? neg_inf_T() : 0.0;
  int count = 0;
  // The window clipped to the image first: a kernel far larger than the image (padding up to half of
  // it) scanned kh * kw cells, mostly padding, and ran long enough on lavapipe to come back wrong.
  int h0 = int(o.z) * sh - ph, w0 = int(o.w) * sw - pw;
  int hs = max(h0, 0), he = min(h0 + kh, H), ws = max(w0, 0), we = min(w0 + kw, W);
  for (int h = hs; h < he; ++h) {
    for (int ww = ws; ww < we; ++ww) {
      T v = x[at4(0, o.x, o.y, uint(h), uint(ww))];
      // on a tie the earlier value stays (-0.0 before +0.0 gives -0.0, as on the CPU)
      acc = is_max ? (isnan(v) || isnan(acc) ? acc + v : (v > acc ? v : acc)) : acc + v;
      ++count;
    }
  }
  y[at4(6, o.x, o.y, o.z, o.w)] = is_max ? acc : acc / T(max(count, 1));
}
