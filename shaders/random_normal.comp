#version 450
// RANDOM_NORMAL by Box-Muller on Philox words, in double as the ABI prescribes (needs shaderFloat64):
// element i uses block i / 2, words 0 and 1 (u1, u2); r = sqrt(-2 ln u1); even i take r cos(2 pi u2),
// odd i r sin(2 pi u2). GLSL has no double-precision log/sin/cos, and "within an ulp" is not enough:
// the draws must be bit-identical to the CPU backend's. So this is the CPU's arithmetic operation for
// operation (backends/cpu/kernels/random.cpp, vmath.h: fdlibm's log and sin/cos kernels), every
// result `precise` so the compiler neither fuses nor reassociates; +, -, *, / and sqrt are correctly
// rounded in double, so the same sequence gives the same bits. extra: seed (0..1), draw (2..3), mean
// (4..5), stddev (6..7).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "philox.glsl"
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };

// fdlibm's __ieee754_log for a positive normal x, as log_f64_normal (vmath.h): x = 2^k (1 + f) with
// sqrt(1/2) <= 1 + f < sqrt(2), log(1 + f) = f - hfsq + s (hfsq + R), s = f / (2 + f).
double log_f64(double x) {
  uvec2 b = unpackDouble2x32(x);  // (low, high) words
  int hx = int(b.y);
  int k = (hx >> 20) - 1023;
  hx &= 0x000fffff;
  int i = (hx + 0x95f64) & 0x100000;  // mantissa >= sqrt(2): halve it, k + 1
  k += i >> 20;
  precise double f = packDouble2x32(uvec2(b.x, uint(hx | (i ^ 0x3ff00000)))) - 1.0LF;
  precise double s = f / (2.0LF + f);
  double dk = double(k);
  precise double z = s * s;
  precise double w = z * z;
  precise double t1 = w * (3.999999999940941908e-01LF + w * (2.222219843214978396e-01LF + w * 1.531383769920937332e-01LF));
  precise double t2 = z * (6.666666666666735130e-01LF +
                           w * (2.857142874366239149e-01LF + w * (1.818357216161805012e-01LF + w * 1.479819860511658591e-01LF)));
  precise double hfsq = 0.5LF * f * f;
  precise double R = t1 + t2;
  precise double r = dk * 6.93147180369123816490e-01LF - ((hfsq - (s * (hfsq + R) + dk * 1.90821492927058770002e-10LF)) - f);
  return r;
}

// cos and sin of 2 pi u, u in (0, 1), as sincos_2pi (random.cpp): the quadrant exactly from u (a
// multiple of 2^-33, never a tie for roundEven), then fdlibm's __kernel_sin/__kernel_cos on |a| <= pi/4.
dvec2 cossin_2pi(double u) {
  double qd = roundEven(4.0LF * u);  // 0..4; 4 wraps to 0
  int q = int(qd) & 3;
  precise double a = (u - 0.25LF * qd) * 6.28318530717958647692LF;  // 2 pi rounded to double, as 2.0 * std::numbers::pi
  precise double z = a * a;
  precise double sr = z * (8.33333333332248946124e-03LF + z * (-1.98412698298579493134e-04LF + z * (2.75573137070700676789e-06LF +
                      z * (-2.50507602534068634195e-08LF + z * 1.58969099521155010221e-10LF))));
  precise double sn = a + a * z * (-1.66666666666666324348e-01LF + sr);
  precise double cr = z * (4.16666666666666019037e-02LF + z * (-1.38888888888741095749e-03LF + z * (2.48015872894767294178e-05LF +
                      z * (-2.75573143513906633035e-07LF + z * (2.08757232129817482790e-09LF + z * -1.13596475577881948265e-11LF)))));
  precise double hz = 0.5LF * z;
  precise double w = 1.0LF - hz;
  precise double cs = w + (((1.0LF - w) - hz) + z * cr);
  return q == 0 ? dvec2(cs, sn) : q == 1 ? dvec2(-sn, cs) : q == 2 ? dvec2(-cs, -sn) : dvec2(sn, -cs);
}

void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uvec4 w = philox(uvec2(P.extra[0], P.extra[1]), uvec2(i / 2u, 0u), uvec2(P.extra[2], P.extra[3]));
  const double scale = 1.0LF / 4294967296.0LF;
  double u1 = (double(w.x) + 0.5LF) * scale, u2 = (double(w.y) + 0.5LF) * scale;
  precise double r = sqrt(-2.0LF * log_f64(u1));
  dvec2 cs = cossin_2pi(u2);
  double mean = packDouble2x32(uvec2(P.extra[4], P.extra[5])), sd = packDouble2x32(uvec2(P.extra[6], P.extra[7]));
  precise double v = mean + sd * (r * ((i & 1u) == 0u ? cs.x : cs.y));
  y[offset_of(6, i)] = T(v);
}
