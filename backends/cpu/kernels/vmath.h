// Vectorisable float32 exp/log/tanh/sigmoid. glibc's scalar expf/logf are accurate but are calls the
// auto-vectoriser cannot widen; these are straight-line Cephes polynomials (<= 2 ulp in tests) with
// selects instead of branches, so loops over them vectorise like `x + 1` does. float64 uses libm: it
// is rarely hot and Cephes' float64 variants would cost more code than they save.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "common.h"

namespace braid::cpu::kern {

inline float exp_f32(float x) {
  // exp(x) = 2^n * exp(r), n = round(x / ln2), |r| <= ln2/2. Clamping keeps n in [-150, 128]; 2^n is
  // applied as two factors so results reaching into subnormals and overflow to inf stay correct.
  // NaN survives the clamps (comparisons are false) and poisons the polynomial.
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  // Adding 1.5*2^23 rounds to an integer (nearest even) and leaves it in the low mantissa bits.
  const float t = xc * 1.44269504088896341f + 0x1.8p23f;
  const int32_t n = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(0x1.8p23f);
  const float nf = t - 0x1.8p23f;
  float r = xc - nf * 0.693359375f;  // ln2 split in two for an exact first product
  r = r - nf * -2.12194440e-4f;
  const float z = r * r;
  const float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
                    1.6666665459e-1f) *
                       r +
                   5.0000001201e-1f) *
                      z +
                  r + 1.0f;
  const int32_t n1 = n >> 1, n2 = n - n1;
  const float s1 = std::bit_cast<float>(uint32_t(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(uint32_t(n2 + 127) << 23);
  return p * s1 * s2;
}

inline float log_f32(float x) {
  // x = m * 2^e with m in [sqrt(.5), sqrt(2)); log(x) = log1p(m - 1) + e ln2 (Cephes logf).
  uint32_t u = std::bit_cast<uint32_t>(x);
  const bool sub = u < 0x00800000u;  // +0 and subnormals: rescale by 2^23 first
  u = std::bit_cast<uint32_t>(sub ? x * 8388608.0f : x);
  const int32_t e = int32_t(u >> 23) - 126 - (sub ? 23 : 0);
  const float m = std::bit_cast<float>((u & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  const float ef = float(e - int32_t(low));
  const float f = low ? m + m - 1.0f : m - 1.0f;
  const float z = f * f;
  float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f - 1.2420140846e-1f) * f +
                 1.4249322787e-1f) *
                    f -
                1.6668057665e-1f) *
                   f +
               2.0000714765e-1f) *
                  f -
              2.4999993993e-1f) *
                 f +
             3.3333331174e-1f) *
            f * z;
  y += -2.12194440e-4f * ef;
  y += -0.5f * z;
  float r = f + y;
  r += 0.693359375f * ef;
  constexpr float inf = std::numeric_limits<float>::infinity();
  r = x == 0.0f ? -inf : r;
  r = x == inf ? inf : r;
  r = !(x >= 0.0f) ? std::numeric_limits<float>::quiet_NaN() : r;  // negative or NaN
  return r;
}

inline float tanh_f32(float x) {
  // Cephes tanhf: odd polynomial below 0.625 (where 1 - 2/(e^2x + 1) would cancel), else via exp.
  const float ax = std::fabs(x);
  const float big = std::copysign(1.0f - 2.0f / (exp_f32(2.0f * ax) + 1.0f), x);
  const float z = x * x;
  const float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
       3.33332819422e-1f) *
          z * x +
      x;
  // copysign: for x = -0 the polynomial gives (P z x) + x = +0 + -0 = +0; tanh(-0) is -0.
  return ax > 0.625f ? big : std::copysign(small, x);
}

// float64 log for positive normal x (fdlibm's __ieee754_log: x = 2^k (1 + f), sqrt(1/2) <= 1 + f <
// sqrt(2), log(1 + f) = f - hfsq + s (hfsq + R) with s = f / (2 + f)); < 1 ulp. No special cases
// (zero, negative, subnormal, inf, NaN): callers guarantee the domain. Vectorises, unlike libm's.
inline double log_f64_normal(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  int32_t hx = int32_t(bits >> 32);
  int32_t k = (hx >> 20) - 1023;
  hx &= 0x000fffff;
  const int32_t i = (hx + 0x95f64) & 0x100000;  // mantissa >= sqrt(2): halve it, k + 1
  k += i >> 20;
  const double f =
      std::bit_cast<double>((uint64_t(uint32_t(hx | (i ^ 0x3ff00000))) << 32) | (bits & 0xffffffffu)) - 1.0;
  const double s = f / (2.0 + f), dk = double(k), z = s * s, w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 =
      z * (6.666666666666735130e-01 +
           w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const double hfsq = 0.5 * f * f, R = t1 + t2;
  return dk * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + R) + dk * 1.90821492927058770002e-10)) - f);
}

template <class T>
inline T v_exp(T x) {
  if constexpr (std::is_same_v<T, float>)
    return exp_f32(x);
  else
    return std::exp(x);
}
template <class T>
inline T v_log(T x) {
  if constexpr (std::is_same_v<T, float>)
    return log_f32(x);
  else
    return std::log(x);
}
template <class T>
inline T v_tanh(T x) {
  if constexpr (std::is_same_v<T, float>)
    return tanh_f32(x);
  else
    return std::tanh(x);
}
template <class T>
inline T v_sigmoid(T x) {
  return T(1) / (T(1) + v_exp(-x));
}

// IEEE square root without errno. Unless the build has -fno-math-errno, GCC pairs every std::sqrt with
// a libm call that sets errno for x < 0 (~40 ns per negative input, and no vectorisation). The bare
// instruction gives the same, correctly rounded, result. With -fno-math-errno std::sqrt vectorises.
template <class T>
inline T v_sqrt(T x) {
#if defined(__SSE2__) && !defined(__NO_MATH_ERRNO__)
  if constexpr (std::is_same_v<T, float>)
    return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x)));
  else
    return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x)));
#else
  return std::sqrt(x);
#endif
}

}  // namespace braid::cpu::kern
