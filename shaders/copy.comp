#version 450
// COPY between any strides, with a cast. MODE picks the pair: 0 32-bit bit copy, 1 64-bit bit copy,
// 2 f32->i32, 3 i32->f32, 4 i32->i64, 5 i64->i32, 6 f32->i64, 7 i64->f32, 8 f32->f16, 9 f16->f32,
// 10 16-bit bit copy (8-10 need the device's 16-bit storage feature), 11 f64->f32, 12 f32->f64,
// 13 f64->i32, 14 i32->f64, 15 f64->i64, 16 i64->f64 (11-16 need shaderFloat64), 17 f32->bf16,
// 18 bf16->f32, 19 f64->bf16, 20 bf16->f64 (bfloat16 is held as its uint16 bit pattern; 17-20 need
// 16-bit storage), 21 f64->f16, 22 f16->f64, 23 f16->bf16, 24 bf16->f16 (both through float32, which
// holds either exactly: one rounding). 64-bit integers are held as uvec2 (low, high) so no device
// feature is needed.
#extension GL_GOOGLE_include_directive : require
#if MODE >= 8
#extension GL_EXT_shader_16bit_storage : require
#endif
layout(local_size_x = 256) in;
#include "common.glsl"
uvec2 i32_to_i64(int v) { return uvec2(uint(v), v < 0 ? 0xffffffffu : 0u); }
uvec2 neg_i64(uvec2 v) {
  uint lo = ~v.x + 1u;
  return uvec2(lo, ~v.y + (lo == 0u ? 1u : 0u));
}
#if MODE == 7
// int64 -> float32 in one rounding to nearest even, as a C cast. Converting the two words separately
// rounds twice, and for a negative value rounds the low word up to 2^32 before the high word's -2^32
// cancels it (-1 gave 0). So: round the magnitude's top 24 bits by the bits below them, then scale.
float i64_to_f32(uvec2 v) {
  bool neg = int(v.y) < 0;
  uvec2 m = neg ? neg_i64(v) : v;  // |INT64_MIN| = 2^63 is right read as unsigned
  if (m.y == 0u && m.x <= 0x1000000u) return neg ? -float(m.x) : float(m.x);  // exact
  int top = m.y != 0u ? 32 + findMSB(m.y) : findMSB(m.x);  // the leading one's bit, 24..63
  int sh = 63 - top;                                         // bring it to bit 63 of (hi, lo)
  uint hi = sh >= 32 ? m.x << (sh - 32) : sh > 0 ? (m.y << sh) | (m.x >> (32 - sh)) : m.y;
  uint lo = sh >= 32 ? 0u : m.x << sh;
  uint mant = hi >> 8, rest = hi & 0xffu;
  if (rest > 0x80u || (rest == 0x80u && (lo != 0u || (mant & 1u) != 0u))) mant += 1u;
  float f = ldexp(float(mant), top - 23);  // mant <= 2^24: exact, and so is the scaling
  return neg ? -f : f;
}
#endif
// float -> integer as every backend converts (backends/common/float_to_int.h): truncation toward
// zero, saturated at the target's bounds, NaN -> 0. A bare int() is undefined out of range (lavapipe
// gives INT32_MIN, NaN included), and int64 cannot go through int32. The int64 result is built from
// the truncated magnitude: its high word is floor(t / 2^32), and t - hi 2^32 is exact in R (a
// multiple of t's ulp below 2^32). Defined for float and, where the mode reads doubles, double.
#define DEFINE_TO_INT(R)                                                                        \
  int to_i32(R v) {                                                                             \
    return isnan(v) ? 0 : v >= R(2147483648.0) ? 0x7fffffff : v <= R(-2147483648.0) ? int(0x80000000u) : int(v); \
  }                                                                                             \
  uvec2 to_i64(R v) {                                                                           \
    if (isnan(v)) return uvec2(0u);                                                             \
    if (v >= R(9223372036854775808.0)) return uvec2(0xffffffffu, 0x7fffffffu);                  \
    if (v <= R(-9223372036854775808.0)) return uvec2(0u, 0x80000000u);                          \
    R t = trunc(abs(v)), hi = floor(t * R(1.0 / 4294967296.0));                                 \
    uvec2 m = uvec2(uint(t - hi * R(4294967296.0)), uint(hi));                                  \
    return v < R(0) ? neg_i64(m) : m;                                                           \
  }
DEFINE_TO_INT(float)
#if MODE == 13 || MODE == 15
DEFINE_TO_INT(double)
#endif
// bfloat16 from float32: round to nearest even on the bit pattern; NaN stays a (quiet) NaN. The bits
// travel as uint (16-bit storage allows only loads, stores and conversions of uint16_t).
uint f32_to_bf16(float v) {
  uint u = floatBitsToUint(v);
  if (isnan(v)) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }
#if MODE == 19
// From float64 in one rounding: the float32 conversion (nearest even) decides unless it landed exactly
// on a bfloat16 tie while inexact; then the side of the tie the double lies on decides.
uint f64_to_bf16(double v) {
  float f = float(v);
  uint u = floatBitsToUint(f);
  if (!isnan(f) && (u & 0xffffu) == 0x8000u && double(f) != v) u = abs(double(f)) > abs(v) ? u - 1u : u + 1u;
  return f32_to_bf16(uintBitsToFloat(u));
}
#endif
#if MODE == 21
// float64 -> float32 rounded to odd (inexact results get their last bit set, truncated toward zero
// first): rounding that to float16 equals rounding the double directly, with no double-rounding error.
float f64_to_f32_odd(double v) {
  float f = float(v);
  if (double(f) != v && !isinf(f) && !isnan(f)) {
    uint u = floatBitsToUint(f);
    if (abs(double(f)) > abs(v)) u -= 1u;
    f = uintBitsToFloat(u | 1u);
  }
  return f;
}
#endif
#if MODE == 0
#define S uint
#define D uint
#define CONVERT(v) v
#elif MODE == 1
#define S uvec2
#define D uvec2
#define CONVERT(v) v
#elif MODE == 2
#define S float
#define D int
#define CONVERT(v) to_i32(v)
#elif MODE == 3
#define S int
#define D float
#define CONVERT(v) float(v)
#elif MODE == 4
#define S int
#define D uvec2
#define CONVERT(v) i32_to_i64(v)
#elif MODE == 5
#define S uvec2
#define D int
#define CONVERT(v) int(v.x)
#elif MODE == 6
#define S float
#define D uvec2
#define CONVERT(v) to_i64(v)
#elif MODE == 7
#define S uvec2
#define D float
#define CONVERT(v) i64_to_f32(v)
#elif MODE == 8
#define S float
#define D float16_t
#define CONVERT(v) float16_t(v)
#elif MODE == 9
#define S float16_t
#define D float
#define CONVERT(v) float(v)
#elif MODE == 10
#define S uint16_t
#define D uint16_t
#define CONVERT(v) v
#elif MODE == 11
#define S double
#define D float
#define CONVERT(v) float(v)
#elif MODE == 12
#define S float
#define D double
#define CONVERT(v) double(v)
#elif MODE == 13
#define S double
#define D int
#define CONVERT(v) to_i32(v)
#elif MODE == 14
#define S int
#define D double
#define CONVERT(v) double(v)
#elif MODE == 15
#define S double
#define D uvec2
#define CONVERT(v) to_i64(v)
#elif MODE == 16
#define S uvec2
#define D double
#define CONVERT(v) (double(int(v.y)) * 4294967296.0LF + double(v.x))
#elif MODE == 17
#define S float
#define D uint16_t
#define CONVERT(v) uint16_t(f32_to_bf16(v))
#elif MODE == 18
#define S uint16_t
#define D float
#define CONVERT(v) bf16_to_f32(uint(v))
#elif MODE == 19
#define S double
#define D uint16_t
#define CONVERT(v) uint16_t(f64_to_bf16(v))
#elif MODE == 20
#define S uint16_t
#define D double
#define CONVERT(v) double(bf16_to_f32(uint(v)))
#elif MODE == 21
#define S double
#define D float16_t
#define CONVERT(v) float16_t(f64_to_f32_odd(v))
#elif MODE == 22
#define S float16_t
#define D double
#define CONVERT(v) double(float(v))
#elif MODE == 23
#define S float16_t
#define D uint16_t
#define CONVERT(v) uint16_t(f32_to_bf16(float(v)))
#else
#define S uint16_t
#define D float16_t
#define CONVERT(v) float16_t(bf16_to_f32(uint(v)))
#endif
layout(std430, binding = 1) readonly buffer In0 { S x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { D y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  y[offset_of(6, i)] = CONVERT(x[offset_of(0, i)]);
}
