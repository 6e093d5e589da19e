// The element type of a float kernel: T is float, or double with -DF64 (needs shaderFloat64). GLSL
// has no double-precision exp/log/pow/tanh, so the F64 build defines them here (~1e-16 relative;
// the conformance bound for float64 transcendentals is 1e-12). The float build defines exp, log,
// tanh and pow too: the built-ins are far off where it matters (log near 1, pow's range, exp's tail).
// pow_T, for both, handles C pow's special cases around pow_abs, which works in double-T arithmetic
// (a value as an unevaluated sum hi + lo; no float64 needed for float, which devices may lack).
// sattr(k) is scalar attribute k in T's precision (float64 kernels read the doubles of P.dattr).
// The functions' values are `precise`: no contraction into fma and no reassociation (which would
// undo the double-T error terms), so a function rounds the same wherever the compiler inlines it (a
// fused kernel, where the op is a constant, or UNARY's switch).
#ifdef F64
#define T double
T sattr(int k) { return packDouble2x32(uvec2(P.dattr[2 * k], P.dattr[2 * k + 1])); }
const double kLn2Hi = 6.93147180369123816490e-01LF, kLn2Lo = 1.90821492927058770002e-10LF;
double inf_d() { return double(uintBitsToFloat(0x7f800000u)); }

// Veltkamp's splitting constant 2^27 + 1, and ln 2, log2(e) and 2/3 as hi + lo.
const double kSplit = 134217729.0LF;
const double kLn2H = 0.6931471805599453LF, kLn2L = 2.3190468138462996e-17LF;
const double kLog2eH = 1.4426950408889634LF, kLog2eL = 2.0355273740931033e-17LF;
const double kTwoThirdsH = 0.6666666666666666LF, kTwoThirdsL = 3.700743415417188e-17LF;
const double kTwoFifthsH = 0.4LF, kTwoFifthsL = -2.2204460492503132e-17LF;
const double kSixthH = 0.16666666666666666LF, kSixthL = 9.25185853854297e-18LF;
const double kTwentyFourthH = 0.041666666666666664LF, kTwentyFourthL = 2.3129646346357427e-18LF;
// pow's result is finite and not 0 for binary exponents in about [kMinExp, kMaxExp].
const double kMaxExp = 1024.0LF, kMinExp = -1074.0LF;
const int kMinNormal = -1022;  // the smallest normal is 2^kMinNormal
// Where pow_int's double-T products can neither overflow (in split) nor lose their low parts.
const double kIntPowMin = -900.0LF, kIntPowMax = 990.0LF;

// x = m 2^e with m in [sqrt(1/2), sqrt(2)), for a positive finite x. frexp reads a subnormal's
// exponent field as if it were normal (log(1e-310) gave -709.09): subnormals are scaled by 2^54
// first (exact) and 54 is taken back from the exponent.
double reduce_T(double x, out int e) {
  bool sub = x < 2.2250738585072014e-308LF;
  precise double m = frexp(sub ? x * 18014398509481984.0LF : x, e);  // m in [0.5, 1)
  if (sub) e -= 54;
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
  return m;
}
// 2^k for k in [-1022, 1023], from its bits (ldexp may flush subnormal results).
double pow2_T(int k) { return packDouble2x32(uvec2(0u, uint(k + 1023) << 20)); }

// pow's polynomials (pow_abs), the parts of its series that T's precision carries: for z = s^2 <=
// 0.0295, (ln((1 + s) / (1 - s)) - 2s - 2s^3/3 - 2s^5/5) / s^7 = 2/7 + 2z/9 + ... (under 4e-6 of the
// whole), and for |t| <= ln2 / 2, (e^t - 1 - t - t^2/2 - t^3/6 - t^4/24) / t^5 = 1/120 + t/720 + ...
// (under 5e-5 of e^t).
double log_tail(double z) {
  precise double p = (((((0.08LF * z + 0.08695652173913043LF) * z + 0.09523809523809523LF) * z +
                        0.10526315789473684LF) * z + 0.11764705882352941LF) * z + 0.13333333333333333LF) * z +
                     0.15384615384615385LF;
  precise double r = ((p * z + 0.18181818181818182LF) * z + 0.2222222222222222LF) * z + 0.2857142857142857LF;
  return r;
}
double exp_tail(double t) {
  precise double p = (((((1.1470745597729725e-11LF * t + 1.6059043836821613e-10LF) * t + 2.08767569878681e-09LF) * t +
                        2.505210838544172e-08LF) * t + 2.755731922398589e-07LF) * t + 2.7557319223985893e-06LF) * t +
                     2.48015873015873e-05LF;
  precise double r = ((p * t + 0.0001984126984126984LF) * t + 0.001388888888888889LF) * t + 0.008333333333333333LF;
  return r;
}
double log_T(double x) {
  if (isnan(x) || x < 0.0LF) return (x - x) / (x - x);  // NaN
  if (x == 0.0LF) return -inf_d();
  if (isinf(x)) return x;
  int e;
  precise double m = reduce_T(x, e);
  precise double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s, term = s, sum = 0.0LF;
  for (int k = 1; k <= 27; k += 2) {
    sum += term / double(k);
    term *= s2;
  }
  precise double result = double(e) * kLn2Hi + (2.0LF * sum + double(e) * kLn2Lo);
  return result;
}

// exp(x) - 1, accurate near 0 too.
double expm1_T(double x) {
  if (isnan(x)) return x;
  if (x > 709.78LF) return inf_d();
  if (x < -745.2LF) return -1.0LF;
  precise double k = abs(x) < 0.34LF ? 0.0LF : floor(x * 1.4426950408889634LF + 0.5LF);
  precise double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2 / 2
  precise double term = r, sum = r;
  for (int n = 2; n <= 18; ++n) {
    term *= r / double(n);
    sum += term;
  }
  precise double result = k == 0.0LF ? sum : ldexp(sum + 1.0LF, int(k)) - 1.0LF;
  return result;
}
double exp_T(double x) {
  if (x > 709.78LF) return isnan(x) ? x : inf_d();
  if (x < -745.2LF) return 0.0LF;
  precise double k = floor(x * 1.4426950408889634LF + 0.5LF);
  precise double r = (x - k * kLn2Hi) - k * kLn2Lo;
  precise double term = 1.0LF, sum = 1.0LF;
  for (int n = 1; n <= 18; ++n) {
    term *= r / double(n);
    sum += term;
  }
  // ldexp may flush results below 2^-1022 (GLSL): build those as a normal value times 2^-64, whose
  // single rounding gives the subnormal.
  return k < -1021.0LF ? ldexp(sum, int(k) + 64) * 5.42101086242752217004e-20LF : ldexp(sum, int(k));
}
// tanh(|x|) = -expm1(-2|x|) / (2 + expm1(-2|x|)), accurate relative to the value near 0 too; the sign
// comes back by negation, so zeros keep theirs (sign(0) * r gave -0 for +0).
double tanh_T(double x) {
  if (isnan(x) || x == 0.0LF) return x;
  precise double e = expm1_T(-2.0LF * abs(x));
  precise double r = -e / (2.0LF + e);
  return x < 0.0LF ? -r : r;
}
double sigmoid_T(double x) {
  if (x >= 0.0LF) return 1.0LF / (1.0LF + exp_T(-x));
  precise double e = exp_T(x);
  return e / (1.0LF + e);
}
bool sign_bit(double v) { return (unpackDouble2x32(v).y >> 31) != 0u; }
#else
#define T float
T sattr(int k) { return P.fattr[k]; }
// Cephes expf, as the CPU backend's exp_f32 (backends/cpu/kernels/vmath.h): n = round(x / ln2) with
// ln2 split so that x - n ln2 is exact, a degree-6 polynomial, and 2^n applied as two factors so
// that results below 2^-126 come out subnormal (the built-in builds 2^n in the exponent bits: 0
// there, exp(-100) = 0) and up to the overflow to inf. The built-in's error also grows with |x|
// (2.4e-6 at -87). Subnormal results need a device that keeps float32 subnormals (lavapipe does).
float exp_T(float x) {
  float xc = x < -104.0 ? -104.0 : x;  // comparisons, not clamp(): NaN passes through
  xc = xc > 89.0 ? 89.0 : xc;
  float nf = roundEven(xc * 1.44269504088896341);
  int n = int(nf);
  precise float r = (xc - nf * 0.693359375) - nf * -2.12194440e-4;  // precise: not refolded into one ln2
  float p = (((((1.9875691500e-4 * r + 1.3981999507e-3) * r + 8.3334519073e-3) * r + 4.1665795894e-2) * r +
              1.6666665459e-1) * r + 5.0000001201e-1) * (r * r) + r + 1.0;
  int n1 = n >> 1, n2 = n - n1;  // each in [-75, 64]: both factors are normal
  return p * uintBitsToFloat(uint(n1 + 127) << 23) * uintBitsToFloat(uint(n2 + 127) << 23);
}
const float kSplit = 4097.0;  // 2^12 + 1
const float kLn2H = 0.6931471824645996, kLn2L = -1.9046542121259336e-09;
const float kLog2eH = 1.4426950216293335, kLog2eL = 1.925963033500011e-08;
const float kTwoThirdsH = 0.6666666865348816, kTwoThirdsL = -1.9868215517249155e-08;
const float kTwoFifthsH = 0.4000000059604645, kTwoFifthsL = -5.9604645663569045e-09;
const float kSixthH = 0.1666666716337204, kSixthL = -4.967053879312289e-09;
const float kTwentyFourthH = 0.0416666679084301, kTwentyFourthL = -1.2417634698280722e-09;
const float kMaxExp = 128.0, kMinExp = -149.0;
const int kMinNormal = -126;
const float kIntPowMin = -70.0, kIntPowMax = 110.0;

// x = m 2^e with m in [sqrt(1/2), sqrt(2)), for a positive finite x, by integer operations on its
// bits, which no denormal mode of the device can flush. A subnormal x = u 2^-149 is normalised first:
// its leading bit p = findMSB(u) moves to the implicit bit's place.
float reduce_T(float x, out int e) {
  uint u = floatBitsToUint(x);
  e = int(u >> 23) - 127;
  if (u < 0x00800000u) {
    int p = findMSB(u);
    u <<= uint(23 - p);
    e = p - 149;
  }
  uint mant = u & 0x007fffffu;
  bool halve = mant >= 0x003504f3u;  // 1.mant >= sqrt(2), rounded down
  e += halve ? 1 : 0;
  return uintBitsToFloat(mant | (halve ? 0x3f000000u : 0x3f800000u));
}
// 2^k for k in [-126, 127], from its bits.
float pow2_T(int k) { return uintBitsToFloat(uint(k + 127) << 23); }

// pow's polynomials, as the float64 ones with fewer terms.
float log_tail(float z) {
  precise float r = ((0.15384615384615385 * z + 0.18181818181818182) * z + 0.2222222222222222) * z + 0.2857142857142857;
  return r;
}
float exp_tail(float t) {
  precise float r = (((2.7557319223985893e-06 * t + 2.48015873015873e-05) * t + 0.0001984126984126984) * t +
                     0.001388888888888889) * t + 0.008333333333333333;
  return r;
}
// ln x = e ln2 + ln(1 + f) with x = (1 + f) 2^e from reduce_T (f = m - 1 is exact). With s = f / (2 + f),
// ln(1 + f) = 2s + 2s^3/3 + 2s^5/5 + ... = 2s + s R(s^2), and since 2s = f - s f = f - (h - s h) for
// h = f^2 / 2, ln(1 + f) = f - (h - s (h + R)): f is exact and the rest is a correction of at most
// about a tenth of it, so the result is within about one ulp, near 1 included (|s| <= 0.172: the
// series to s^9 leaves 2e-9 relative). The built-in log was 13% off at 1 - 2^-23 (lavapipe) and
// read a subnormal's exponent as if it were normal. ln 2 is split as 0.693359375 (e ln2hi is exact)
// plus the rest.
float log_T(float x) {
  if (isnan(x) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
  if (x == 0.0) return uintBitsToFloat(0xff800000u);
  if (isinf(x)) return x;
  int e;
  precise float f = reduce_T(x, e) - 1.0;
  precise float s = f / (2.0 + f), z = s * s, h = 0.5 * f * f;
  precise float r = z * (0.6666666666666666 + z * (0.4 + z * (0.2857142857142857 + z * 0.2222222222222222)));
  float fe = float(e);
  precise float result = fe * 0.693359375 + (f - (h - (s * (h + r) + fe * -2.12194440e-4)));
  return result;
}
// Cephes tanhf, as the CPU backend's tanh_f32 (backends/cpu/kernels/vmath.h): an odd polynomial up to
// 0.625, where (1 - e) / (1 + e) with e = exp(-2|x|) cancels (4.7% off at 1e-6), else via exp. A zero
// is returned as is, keeping its sign.
float tanh_T(float x) {
  float ax = abs(x);
  if (ax > 0.625) {
    float r = 1.0 - 2.0 / (exp_T(2.0 * ax) + 1.0);
    return x < 0.0 ? -r : r;
  }
  if (x == 0.0) return x;
  float z = x * x;
  return ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
          3.33332819422e-1) * z * x + x;
}
// As the CPU backend's v_sigmoid, so both give 0 below about -88.7 (exp(-v) overflows), as PyTorch's
// float32 sigmoid does.
float sigmoid_T(float v) { return 1.0 / (1.0 + exp_T(-v)); }
bool sign_bit(float v) { return (floatBitsToUint(v) >> 31) != 0u; }
#endif
T neg_inf_T() { return T(uintBitsToFloat(0xff800000u)); }
T pos_inf_T() { return T(uintBitsToFloat(0x7f800000u)); }
T nan_T() { return T(uintBitsToFloat(0x7fc00000u)); }

// Double-T arithmetic for pow: a value as hi + lo with |lo| <= ulp(hi) / 2, about 2p bits for T's p
// (Dekker, Knuth). No fma: the built-in may be a separate multiply and add (Vulkan's precision rules).
struct DT {
  T hi, lo;
};
// a + b = hi + lo exactly, for any a and b.
DT two_sum(T a, T b) {
  precise T s = a + b, bb = s - a;
  precise T err = (a - (s - bb)) + (b - bb);
  return DT(s, err);
}
// a + b = hi + lo exactly where |a| >= |b| or a = 0.
DT quick_sum(T a, T b) {
  precise T s = a + b;
  precise T err = b - (s - a);
  return DT(s, err);
}
// a = hi + lo with each half of T's significand, so that products of halves are exact.
DT split(T a) {
  precise T c = kSplit * a;
  precise T hi = c - (c - a);
  precise T lo = a - hi;
  return DT(hi, lo);
}
// a * b = hi + lo exactly (for products well inside T's range).
DT two_prod(T a, T b) {
  DT x = split(a), y = split(b);
  precise T p = a * b;
  precise T err = ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo;
  return DT(p, err);
}
DT dt_add(DT a, DT b) {
  DT s = two_sum(a.hi, b.hi);
  precise T lo = s.lo + (a.lo + b.lo);
  return quick_sum(s.hi, lo);
}
DT dt_mul(DT a, DT b) {
  DT p = two_prod(a.hi, b.hi);
  precise T lo = p.lo + (a.hi * b.lo + a.lo * b.hi);
  return quick_sum(p.hi, lo);
}

// acc x + c, in double-T: one step of a polynomial's Horner scheme.
DT dt_horner(DT acc, DT x, T ch, T cl) { return dt_add(dt_mul(acc, x), DT(ch, cl)); }
// log2(a) as hi + lo, for a positive finite a: e + ln(1 + f) / ln2 with a = (1 + f) 2^e from
// reduce_T, and ln(1 + f) = s (2 + z (2/3 + z (2/5 + z log_tail(z)))) with s = f / (2 + f), z = s^2 as
// in the float log_T, here in double-T but for log_tail's part (about 2^-40 relative for float).
DT log2_dt(T a) {
  int e;
  precise T f = reduce_T(a, e) - T(1.0);  // exact
  precise T d = T(2.0) + f;
  precise T dlo = f - (d - T(2.0));  // 2 + f = d + dlo exactly
  precise T sh = f / d;
  DT q = two_prod(sh, d);
  precise T sl = (((f - q.hi) - q.lo) - sh * dlo) / d;  // the quotient's remainder; f - q.hi is exact
  DT s = quick_sum(sh, sl);
  DT zp = two_prod(s.hi, s.hi);
  precise T zlo = zp.lo + T(2.0) * s.hi * s.lo;
  DT z = quick_sum(zp.hi, zlo);  // s^2
  precise T tail = z.hi * log_tail(z.hi);
  // Each step a new name: glslang's precise analysis loops on a reassigned struct.
  DT c5 = dt_add(DT(kTwoFifthsH, kTwoFifthsL), DT(tail, T(0.0)));
  DT c3 = dt_horner(c5, z, kTwoThirdsH, kTwoThirdsL);
  DT ln = dt_mul(s, dt_horner(c3, z, T(2.0), T(0.0)));
  return dt_add(DT(T(e), T(0.0)), dt_mul(ln, DT(kLog2eH, kLog2eL)));
}
// (p.hi + p.lo) 2^k for k <= kMinNormal and p in [0.7, 1.5]: a subnormal or one of the smallest normals,
// rounded once to the multiple of 2^kMinExp. Rounding p to T first and scaling after would round twice
// (up to 3/4 of an ulp off). In units of 2^kMinExp, p = vh + vl (both exact) is rounded as
// w = roundEven(vh) plus its remainder's side.
T scale_tiny(DT p, int k) {
  T unit = pow2_T(k - int(kMinExp));  // k - kMinExp in [-3, T's fraction bits]
  precise T vh = p.hi * unit, vl = p.lo * unit;
  precise T w = roundEven(vh);
  precise T d = (vh - w) + vl;  // vh - w is exact
  precise T units = w + (d > T(0.5) ? T(1.0) : d < T(-0.5) ? T(-1.0) : T(0.0));
  precise T result = (units * pow2_T(int(kMinExp) - kMinNormal)) * pow2_T(kMinNormal);  // both exact
  return result;
}
// 2^(y.hi + y.lo) for y.hi in [kMinExp - 3, kMaxExp + 1]: 2^n e^t with n = round(y.hi) and
// t = (y - n) ln2, e^t = 1 + t (1 + t (1/2 + t (1/6 + t (1/24 + t exp_tail(t))))) in double-T but for
// exp_tail's part, rounded once to T and scaled by 2^n as two factors (exact; inf past the largest
// finite value), or, at the bottom of the range, rounded to a subnormal by scale_tiny.
T exp2_dt(DT y) {
  precise T n = roundEven(y.hi);
  precise T rh = y.hi - n;  // exact
  DT t = dt_mul(two_sum(rh, y.lo), DT(kLn2H, kLn2L));
  precise T tail = t.hi * exp_tail(t.hi);
  DT c4 = dt_add(DT(kTwentyFourthH, kTwentyFourthL), DT(tail, T(0.0)));
  DT c3 = dt_horner(c4, t, kSixthH, kSixthL);
  DT c2 = dt_horner(c3, t, T(0.5), T(0.0));
  DT c1 = dt_horner(c2, t, T(1.0), T(0.0));
  DT p = dt_horner(c1, t, T(1.0), T(0.0));
  int k = int(n);
  if (k <= kMinNormal) return scale_tiny(p, k);
  precise T pt = p.hi + p.lo;
  int k1 = k >> 1;
  precise T result = (pt * pow2_T(k1)) * pow2_T(k - k1);
  return result;
}
// a^n for an integer n in [3, 63] where log2 of the result is in [kIntPowMin, kIntPowMax], by squaring
// in double-T, rounded once: exact while the powers fit in double-T, so that a result halfway between
// two Ts rounds to even (11^7 = 19487171 in float32, which the exp2/log2 route, off by 2^-40, can
// round either way), and within 2^-40 or so otherwise.
T pow_int(T a, int n) {
  DT p = DT(a, T(0.0)), r = DT(T(1.0), T(0.0));
  for (int i = 0; i < 6 && n != 0; ++i) {
    if ((n & 1) != 0) r = dt_mul(r, p);
    n >>= 1;
    if (n != 0) p = dt_mul(p, p);
  }
  precise T result = r.hi + r.lo;
  return result;
}
// a^b for a positive finite base and a finite exponent: 2^(b log2(a)), the product in double-T too.
// Exponents past the range give inf or 0 at once (which also keeps b's split from overflowing).
T pow_abs(T a, T b) {
  DT l = log2_dt(a);
  precise T y = b * l.hi;
  if (y > kMaxExp + T(1.0)) return pos_inf_T();
  if (y < kMinExp - T(3.0)) return T(0.0);
  if (b >= T(3.0) && b < T(64.0) && b == floor(b) && y > kIntPowMin && y < kIntPowMax) return pow_int(a, int(b));
  DT p = two_prod(b, l.hi);
  precise T lo = p.lo + b * l.lo;
  return exp2_dt(quick_sum(p.hi, lo));
}
// pow as C's pow (C11 F.10.4.4), like the CPU backend: b = 0 or a = 1 gives 1 (NaN included); zeros
// and infinities by the table (odd integer exponents keep the base's sign); a negative base needs an
// integer exponent and takes the sign of (-1)^b; b = 2 is a * a, as on the CPU. Only a positive
// finite base with a finite exponent reaches pow_abs.
T pow_T(T a, T b) {
  if (b == T(0) || a == T(1)) return T(1);
  if (isnan(a) || isnan(b)) return a + b;
  if (b == T(2)) return a * a;
  bool odd = !isinf(b) && floor(b) == b && floor(b * T(0.5)) != b * T(0.5);
  if (isinf(b)) return abs(a) == T(1) ? T(1) : (abs(a) < T(1)) == (b > T(0)) ? T(0) : pos_inf_T();
  if (a == T(0) || isinf(a)) {
    T r = (b > T(0)) == (a != T(0)) ? pos_inf_T() : T(0);  // |a|^b: 0^+ = 0, 0^- = inf, inf^+ = inf
    return odd && sign_bit(a) ? -r : r;
  }
  if (a < T(0) && floor(b) != b) return nan_T();  // no real root
  // |a| = 1 exactly: log2 is 0, so pow_abs's range checks pass any b and its split of a huge b would
  // overflow (inf - inf); the power is 1, signed below.
  T r = a == T(-1) ? T(1) : pow_abs(abs(a), b);
  return a < T(0) && odd ? -r : r;
}
