#version 450
// ARGMAX along one axis: one workgroup per output element; extra[0] = axis length, extra[1] = input
// stride along it. The first maximum wins (smallest index among equals). Output int64 as (low, high).
// -DINTEGER: int32 (-DI64: int64, needs shaderInt64) values.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#ifdef INTEGER
#ifdef I64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#else
#define T int
#endif
bool isnan(T v) { return false; }
#else
#include "real.glsl"
#endif
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { uvec2 y[]; };
shared T bv[256];
shared uint bi[256];

bool better(T v, uint i, T w, uint j) {
  // NaN counts as the maximum and the first NaN wins, like the CPU backend: the tree below merges
  // indices out of order, so between two NaNs the lower index must win here too.
  if (isnan(w)) return isnan(v) && i < j;
  if (isnan(v)) return true;
  return v > w || (v == w && i < j);
}

void main() {
  uint o = group_id();
  if (o >= P.n) return;
  uint base = offset_of(0, o);
  uint len = P.extra[0];
  int stride = int(P.extra[1]);
  uint t = gl_LocalInvocationID.x;
  T best = T(0);  // besti marks it unset
  uint besti = 0xffffffffu;
  for (uint k = t; k < len; k += 256) {
    T v = x[int(base) + int(k) * stride];
    if (besti == 0xffffffffu || better(v, k, best, besti)) {
      best = v;
      besti = k;
    }
  }
  bv[t] = best;
  bi[t] = besti;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s && bi[t + s] != 0xffffffffu && (bi[t] == 0xffffffffu || better(bv[t + s], bi[t + s], bv[t], bi[t]))) {
      bv[t] = bv[t + s];
      bi[t] = bi[t + s];
    }
    barrier();
  }
  if (t == 0) y[offset_of(6, o)] = uvec2(bi[0] == 0xffffffffu ? 0u : bi[0], 0u);
}
