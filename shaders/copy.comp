#version 450
// COPY between any strides, with a cast. MODE picks the pair: 0 32-bit bit copy, 1 64-bit bit copy,
// 2 f32->i32, 3 i32->f32, 4 i32->i64, 5 i64->i32, 6 f32->i64, 7 i64->f32. 64-bit integers are held as
// uvec2 (low, high) so no device feature is needed.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
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
#define CONVERT(v) int(v)
#elif MODE == 3
#define S int
#define D float
#define CONVERT(v) float(v)
#elif MODE == 4
#define S int
#define D uvec2
#define CONVERT(v) uvec2(uint(v), v < 0 ? 0xffffffffu : 0u)
#elif MODE == 5
#define S uvec2
#define D int
#define CONVERT(v) int(v.x)
#elif MODE == 6
#define S float
#define D uvec2
#define CONVERT(v) uvec2(uint(int(v)), int(v) < 0 ? 0xffffffffu : 0u)
#else
#define S uvec2
#define D float
#define CONVERT(v) (float(int(v.y)) * 4294967296.0 + float(v.x))
#endif
layout(std430, binding = 1) readonly buffer In0 { S x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { D y[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  S v = x[offset_of(0, i)];
  y[offset_of(6, i)] = CONVERT(v);
}
