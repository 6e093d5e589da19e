#version 450
// DROPOUT: keep element i when its uniform u >= p, i.e. w >= extra[4] (= ceil(p 2^32 - 0.5), as a
// 33-bit threshold: extra[5] = 1 means "never keep"); y = x * scale, mask = keep; scale in extra[6..7]
// as a double. A dropped element is x * 0, as PyTorch multiplies by the mask: NaN where x is inf or NaN
// (with common.glsl's runtime_zero: a literal 0 is folded away).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "philox.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
layout(std430, binding = 8) writeonly buffer Out1 { T mask[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  bool keep = P.extra[5] == 0u && philox_word(i) >= P.extra[4];
  T v = x[offset_of(0, i)];
  precise T dropped = v * T(runtime_zero());
  y[offset_of(6, i)] = keep ? T(double(v) * packDouble2x32(uvec2(P.extra[6], P.extra[7]))) : dropped;
  if (P.iattr[0] != 0) mask[offset_of(7, i)] = keep ? 1.0 : 0.0;
}
