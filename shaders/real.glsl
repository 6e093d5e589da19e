// The element type of a float kernel: T is float, or double with -DF64 (needs shaderFloat64). GLSL
// has no double-precision exp/log/pow/tanh, so the F64 build defines them here (~1e-16 relative;
// the conformance bound for float64 transcendentals is 1e-12); the float build uses the built-ins.
// pow_T, for both, handles C pow's special cases around the built-in (or exp/log) magnitude.
// sattr(k) is scalar attribute k in T's precision (float64 kernels read the doubles of P.dattr).
// The float64 functions' values are `precise`: no contraction into fma, so a function rounds the same
// wherever the compiler inlines it (a fused kernel, where the op is a constant, or UNARY's switch).
#ifdef F64
#define T double
T sattr(int k) { return packDouble2x32(uvec2(P.dattr[2 * k], P.dattr[2 * k + 1])); }
const double kLn2Hi = 6.93147180369123816490e-01LF, kLn2Lo = 1.90821492927058770002e-10LF;
double inf_d() { return double(uintBitsToFloat(0x7f800000u)); }

double log_T(double x) {
  if (isnan(x) || x < 0.0LF) return (x - x) / (x - x);  // NaN
  if (x == 0.0LF) return -inf_d();
  if (isinf(x)) return x;
  // frexp reads a subnormal's exponent field as if it were normal (log(1e-310) gave -709.09): scale
  // subnormals by 2^54 first (exact) and take 54 back from the exponent.
  bool sub = x < 2.2250738585072014e-308LF;
  int e;
  precise double m = frexp(sub ? x * 18014398509481984.0LF : x, e);  // x = m 2^e, m in [0.5, 1)
  if (sub) e -= 54;
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
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
// a^b for a positive finite base and a finite exponent.
double pow_abs(double a, double b) { return exp_T(b * log_T(a)); }
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
// The built-in log reads a subnormal's exponent field as if it were normal (log(1e-40) = -88.02).
// A subnormal x = m 2^-149 is normalised by integer operations on its bits, which no denormal mode
// of the device can flush: x = f 2^(p - 149) with f = m / 2^p in [1, 2), p = findMSB(m).
float log_T(float x) {
  uint u = floatBitsToUint(x);
  if (u == 0u || u >= 0x00800000u) return log(x);  // zero, normal, inf, NaN or negative
  int p = findMSB(u);
  float f = uintBitsToFloat(((u << (23 - p)) & 0x007fffffu) | 0x3f800000u);
  float e = float(p - 149);
  return e * 0.693359375 + (log(f) + e * -2.12194440e-4);  // ln2 split: e * 0.693359375 is exact
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
// The built-in pow is defined only for a positive base (undefined at 0, NaN for a negative base).
float pow_abs(float a, float b) { return pow(a, b); }
bool sign_bit(float v) { return (floatBitsToUint(v) >> 31) != 0u; }
#endif
T neg_inf_T() { return T(uintBitsToFloat(0xff800000u)); }
T pos_inf_T() { return T(uintBitsToFloat(0x7f800000u)); }
T nan_T() { return T(uintBitsToFloat(0x7fc00000u)); }

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
  T r = pow_abs(abs(a), b);
  return a < T(0) && odd ? -r : r;
}
