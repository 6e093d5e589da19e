#version 450
// RANDOM_NORMAL by Box-Muller on Philox words, in double as the ABI prescribes (needs shaderFloat64):
// element i uses block i / 2, words 0 and 1 (u1, u2); r = sqrt(-2 ln u1); even i take r cos(2 pi u2),
// odd i r sin(2 pi u2). GLSL has no double-precision log/sin/cos, so they are evaluated here to about
// 1e-16 relative: log by frexp and the atanh series, sin/cos by quarter-turn reduction (exact for these
// u) and Taylor series on [-pi/4, pi/4]. extra: seed (0..1), draw (2..3), mean (4..5), stddev (6..7).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "philox.glsl"
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };

double log_f64(double x) {
  int e;
  double m = frexp(x, e);  // x = m 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
  double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
  double term = s, sum = 0.0LF;
  for (int k = 1; k <= 27; k += 2) {
    sum += term / double(k);
    term *= s2;
  }
  const double ln2_hi = 6.93147180369123816490e-01LF, ln2_lo = 1.90821492927058770002e-10LF;
  return double(e) * ln2_hi + (2.0LF * sum + double(e) * ln2_lo);
}

// cos and sin of 2 pi u.
dvec2 cossin_2pi(double u) {
  double k = floor(4.0LF * u + 0.5LF);
  double t = (u - 0.25LF * k) * 6.283185307179586477LF;  // in [-pi/4, pi/4]
  double t2 = t * t;
  double c = 1.0LF, s = 1.0LF, tc = 1.0LF, ts = 1.0LF;
  for (int n = 1; n <= 11; ++n) {
    tc *= -t2 / double((2 * n - 1) * (2 * n));
    ts *= -t2 / double((2 * n) * (2 * n + 1));
    c += tc;
    s += ts;
  }
  s *= t;
  int q = int(k) & 3;
  return q == 0 ? dvec2(c, s) : q == 1 ? dvec2(-s, c) : q == 2 ? dvec2(-c, -s) : dvec2(s, -c);
}

void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 w = philox(uvec2(P.extra[0], P.extra[1]), uvec2(i / 2u, 0u), uvec2(P.extra[2], P.extra[3]));
  const double scale = 1.0LF / 4294967296.0LF;
  double u1 = (double(w.x) + 0.5LF) * scale, u2 = (double(w.y) + 0.5LF) * scale;
  double r = sqrt(-2.0LF * log_f64(u1));
  dvec2 cs = cossin_2pi(u2);
  double mean = packDouble2x32(uvec2(P.extra[4], P.extra[5])), sd = packDouble2x32(uvec2(P.extra[6], P.extra[7]));
  y[offset_of(6, i)] = T(mean + sd * (r * ((i & 1u) == 0u ? cs.x : cs.y)));
}
