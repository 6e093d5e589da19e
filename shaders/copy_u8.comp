#version 450
// uint8 storage without 8-bit storage buffers: uint8 tensors are read and written as the uint32 words
// that hold them (little-endian bytes); a byte is stored with an atomicAnd (clear) and an atomicOr
// (set) on its word, so neighbouring bytes written by other invocations are never lost. MODE: 0 copy
// u8->u8, 1 f32->u8, 2 u8->f32, 3 i32->u8, 4 u8->i32, 5 i64->u8, 6 u8->i64, 7 f64->u8, 8 u8->f64 (7-8
// need shaderFloat64), 9 fill u8 (the byte in extra[0]). Conversions as the CPU backend's: from a
// float, truncation saturated to [0, 255] with NaN -> 0; from an integer, the low byte.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"

#define U8_SRC (MODE == 0 || MODE == 2 || MODE == 4 || MODE == 6 || MODE == 8)
#define U8_DST (MODE == 0 || MODE == 1 || MODE == 3 || MODE == 5 || MODE == 7 || MODE == 9)

#if U8_SRC
layout(std430, binding = 1) readonly buffer In0 { uint xw[]; };
uint load_u8(uint e) { return (xw[e >> 2] >> ((e & 3u) * 8u)) & 0xffu; }
#elif MODE == 1
layout(std430, binding = 1) readonly buffer In0 { float x[]; };
#elif MODE == 3
layout(std430, binding = 1) readonly buffer In0 { int x[]; };
#elif MODE == 5
layout(std430, binding = 1) readonly buffer In0 { uvec2 x[]; };
#elif MODE == 7
layout(std430, binding = 1) readonly buffer In0 { double x[]; };
#endif

#if U8_DST
layout(std430, binding = 7) buffer Out0 { uint yw[]; };
void store_u8(uint e, uint v) {
  uint sh = (e & 3u) * 8u;
  atomicAnd(yw[e >> 2], ~(0xffu << sh));
  atomicOr(yw[e >> 2], (v & 0xffu) << sh);
}
#elif MODE == 2
layout(std430, binding = 7) writeonly buffer Out0 { float y[]; };
#elif MODE == 4
layout(std430, binding = 7) writeonly buffer Out0 { int y[]; };
#elif MODE == 6
layout(std430, binding = 7) writeonly buffer Out0 { uvec2 y[]; };
#elif MODE == 8
layout(std430, binding = 7) writeonly buffer Out0 { double y[]; };
#endif

#if MODE == 1
uint sat_u8(float v) { return isnan(v) || v <= 0.0 ? 0u : v >= 256.0 ? 255u : uint(v); }
#elif MODE == 7
uint sat_u8(double v) { return isnan(v) || v <= 0.0LF ? 0u : v >= 256.0LF ? 255u : uint(v); }
#endif

void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uint o = offset_of(6, i);
#if MODE == 9
  store_u8(o, P.extra[0]);
#elif MODE == 0
  store_u8(o, load_u8(offset_of(0, i)));
#elif MODE == 1 || MODE == 7
  store_u8(o, sat_u8(x[offset_of(0, i)]));
#elif MODE == 3
  store_u8(o, uint(x[offset_of(0, i)]));
#elif MODE == 5
  store_u8(o, x[offset_of(0, i)].x);
#elif MODE == 2
  y[o] = float(load_u8(offset_of(0, i)));
#elif MODE == 4
  y[o] = int(load_u8(offset_of(0, i)));
#elif MODE == 6
  y[o] = uvec2(load_u8(offset_of(0, i)), 0u);
#else
  y[o] = double(load_u8(offset_of(0, i)));
#endif
}
