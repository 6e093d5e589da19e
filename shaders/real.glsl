// The element type of a float kernel: T is float, or double with -DF64 (needs shaderFloat64). GLSL
// has no double-precision exp/log/pow/tanh, so the F64 build defines them here (~1e-16 relative;
// the conformance bound for float64 transcendentals is 1e-12); the float build uses the built-ins.
// sattr(k) is scalar attribute k in T's precision (float64 kernels read the doubles of P.dattr).
#ifdef F64
#define T double
T sattr(int k) { return packDouble2x32(uvec2(P.dattr[2 * k], P.dattr[2 * k + 1])); }
const double kLn2Hi = 6.93147180369123816490e-01LF, kLn2Lo = 1.90821492927058770002e-10LF;
double inf_d() { return double(uintBitsToFloat(0x7f800000u)); }

double log_T(double x) {
  if (isnan(x) || x < 0.0LF) return (x - x) / (x - x);  // NaN
  if (x == 0.0LF) return -inf_d();
  if (isinf(x)) return x;
  int e;
  double m = frexp(x, e);  // x = m 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752LF) {
    m *= 2.0LF;
    e -= 1;
  }
  double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s, term = s, sum = 0.0LF;
  for (int k = 1; k <= 27; k += 2) {
    sum += term / double(k);
    term *= s2;
  }
  return double(e) * kLn2Hi + (2.0LF * sum + double(e) * kLn2Lo);
}

// exp(x) - 1, accurate near 0 too.
double expm1_T(double x) {
  if (isnan(x)) return x;
  if (x > 709.78LF) return inf_d();
  if (x < -745.2LF) return -1.0LF;
  double k = abs(x) < 0.34LF ? 0.0LF : floor(x * 1.4426950408889634LF + 0.5LF);
  double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2 / 2
  double term = r, sum = r;
  for (int n = 2; n <= 18; ++n) {
    term *= r / double(n);
    sum += term;
  }
  return k == 0.0LF ? sum : ldexp(sum + 1.0LF, int(k)) - 1.0LF;
}
double exp_T(double x) {
  if (x > 709.78LF) return isnan(x) ? x : inf_d();
  if (x < -745.2LF) return 0.0LF;
  double k = floor(x * 1.4426950408889634LF + 0.5LF);
  double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double term = 1.0LF, sum = 1.0LF;
  for (int n = 1; n <= 18; ++n) {
    term *= r / double(n);
    sum += term;
  }
  return ldexp(sum, int(k));
}
double tanh_T(double x) {
  if (isnan(x)) return x;
  double e = expm1_T(-2.0LF * abs(x));
  return sign(x) * (-e / (2.0LF + e));
}
double sigmoid_T(double x) {
  if (x >= 0.0LF) return 1.0LF / (1.0LF + exp_T(-x));
  double e = exp_T(x);
  return e / (1.0LF + e);
}
double pow_T(double a, double b) {
  if (b == 0.0LF || a == 1.0LF) return 1.0LF;
  if (isnan(a) || isnan(b)) return a + b;
  if (a == 0.0LF) return b > 0.0LF ? 0.0LF : inf_d();
  if (a < 0.0LF) {
    if (floor(b) != b) return (a - a) / (a - a);  // NaN: no real root
    double r = exp_T(b * log_T(-a));
    return mod(b, 2.0LF) == 1.0LF ? -r : r;
  }
  return exp_T(b * log_T(a));
}
#else
#define T float
T sattr(int k) { return P.fattr[k]; }
#define log_T log
#define exp_T exp
float tanh_T(float v) {
  float e = exp(-2.0 * abs(v));
  return sign(v) * (1.0 - e) / (1.0 + e);
}
float sigmoid_T(float v) { return v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); }
#define pow_T pow
#endif
T neg_inf_T() { return T(uintBitsToFloat(0xff800000u)); }
T pos_inf_T() { return T(uintBitsToFloat(0x7f800000u)); }
