// Element conversions among the seven dtypes (COPY/cast, FILL). Floating targets round to nearest
// even; float -> integer truncates toward zero and saturates (NaN -> 0) so no cast is undefined;
// integer -> narrower integer wraps (two's complement), as C++20 and NumPy do.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"
#include "float_to_int.h"

namespace braid::cpu::kern {

// ---- float16 / bfloat16 --------------------------------------------------------------------------

// float -> IEEE half, round to nearest even (F. Giesen's branch-light formulation): subnormal
// results come from an FP add that aligns the 10 mantissa bits, normal ones from a biased integer
// round. Overflow gives inf, NaN stays a quiet NaN.
inline uint16_t float_to_half_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint16_t o;
  if (u >= (127u + 16u) << 23) {  // |f| >= 65536: inf, or NaN
    o = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {  // below 2^-14: half subnormal or zero
    // 0.5 has a float ulp of 2^-24, the half subnormal step: adding it rounds f to that step.
    const float magic = std::bit_cast<float>(126u << 23);
    const float r = std::bit_cast<float>(u) + magic;
    o = uint16_t(std::bit_cast<uint32_t>(r) - std::bit_cast<uint32_t>(magic));
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (uint32_t(15 - 127) << 23) + 0xfffu + odd;  // rebias and round half to even
    o = uint16_t(u >> 13);                           // a carry out of the mantissa bumps the exponent
  }
  return uint16_t(o | sign);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = float(mant) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                  // RNE; overflow -> inf
}

inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// double -> float rounded to odd. Rounding that to half/bfloat16 equals rounding the double
// directly (float keeps >= 2 more bits than either), so no double-rounding error.
inline float double_to_float_odd(double d) {
  float f = float(d);
  if (double(f) != d && std::isfinite(f)) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if (std::fabs(double(f)) > std::fabs(d)) --u;  // truncate toward zero...
    f = std::bit_cast<float>(u | 1u);              // ...and make it sticky
  }
  return f;
}

// ---- the generic conversion ------------------------------------------------------------------------

template <class T>
inline constexpr bool is_half16 = std::is_same_v<T, half_t> || std::is_same_v<T, bf16_t>;

using plugin::float_to_int;

template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, half_t>) {
    return convert<To>(half_bits_to_float(x.bits));
  } else if constexpr (std::is_same_v<From, bf16_t>) {
    return convert<To>(bf16_bits_to_float(x.bits));
  } else if constexpr (std::is_same_v<To, half_t> || std::is_same_v<To, bf16_t>) {
    float f;
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, uint8_t>)
      f = float(x);
    else  // double, int32 (exact in double), int64
      f = double_to_float_odd(double(x));
    if constexpr (std::is_same_v<To, half_t>)
      return half_t{float_to_half_bits(f)};
    else
      return bf16_t{float_to_bf16_bits(f)};
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(x);
  } else {
    return static_cast<To>(x);  // int <-> int wraps, anything -> float/double rounds to nearest
  }
}

}  // namespace braid::cpu::kern
