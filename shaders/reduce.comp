#version 450
// REDUCE: one workgroup per output element. iattr[0] = braid_reduce_op (sum, mean, max, min, norm).
// Operand 0 strides over P.shape (the output's shape) give each group's first input element; the
// reduced axes are extra[1] dims with sizes extra[2..9] and input strides extra[10..17]; extra[0]
// elements are reduced. Sums use subgroupAdd where the device has subgroup arithmetic (-DSUBGROUP),
// else a shared-memory tree; max/min always use the tree (it propagates NaN like the CPU backend).
// -DINTEGER: int32 (-DI64: int64, needs shaderInt64) sum, max and min, wrapping like the CPU backend
// (the runtime sums int32 in int64, and refuses integer mean and norm).
#extension GL_GOOGLE_include_directive : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 256) in;
#include "common.glsl"
#ifdef INTEGER
#ifdef I64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#define T_LOWEST int64_t(0x8000000000000000l)
#define T_HIGHEST int64_t(0x7fffffffffffffffl)
#else
#define T int
#define T_LOWEST int(0x80000000u)
#define T_HIGHEST int(0x7fffffff)
#endif
#else
#include "real.glsl"
#define T_LOWEST neg_inf_T()
#define T_HIGHEST pos_inf_T()
#endif
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
shared T part[256];

T combine(int op, T a, T b) {
#ifdef INTEGER
  if (op == 2) return max(a, b);
  if (op == 3) return min(a, b);
#else
  // a holds the earlier elements (the running value, the lower half of the tree): on a tie it stays,
  // so -0.0 and +0.0 reduce to whichever comes first, as on the CPU (GLSL's max/min may pick either).
  if (op == 2) return isnan(a) || isnan(b) ? a + b : (b > a ? b : a);
  if (op == 3) return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
#endif
  return a + b;
}

// The reduction of the group's total: mean and norm finish it (float only).
T finish(int op, T total, uint r) {
#ifdef INTEGER
  return total;
#else
  return op == 1 ? total / T(r) : op == 4 ? sqrt(total) : total;
#endif
}

void main() {
  uint o = group_id();
  if (o >= P.n) return;  // uniform across the group
  int op = P.iattr[0];
  uint base = offset_of(0, o);
  uint r = P.extra[0], rnd = P.extra[1];
  uint t = gl_LocalInvocationID.x;
  T acc = op == 2 ? T_LOWEST : op == 3 ? T_HIGHEST : T(0);
  for (uint j = t; j < r; j += 256) {
    uint idx = j;
    int off = int(base);
    if (rnd == 1u) {  // one (merged) reduced dimension: no division
      off += int(idx) * int(P.extra[10]);
    } else {
      for (int d = int(rnd) - 1; d >= 0; --d) {
        uint s = P.extra[2 + d];
        off += int(idx % s) * int(P.extra[10 + d]);
        idx /= s;
      }
    }
    T v = x[off];
    acc = combine(op, acc, op == 4 ? v * v : v);
  }
#ifdef SUBGROUP
  if (op != 2 && op != 3) {
    T s = subgroupAdd(acc);
    if (subgroupElect()) part[gl_SubgroupID] = s;
    barrier();
    if (t == 0) {
      T total = T(0);
      for (uint i = 0; i < gl_NumSubgroups; ++i) total += part[i];
      y[offset_of(6, o)] = finish(op, total, r);
    }
    return;
  }
#endif
  part[t] = acc;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) part[t] = combine(op, part[t], part[t + s]);
    barrier();
  }
  if (t == 0) {
    y[offset_of(6, o)] = finish(op, part[0], r);
  }
}
