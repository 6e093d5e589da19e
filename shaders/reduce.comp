#version 450
// REDUCE: one workgroup per output element. iattr[0] = braid_reduce_op (sum, mean, max, min, norm).
// Operand 0 strides over P.shape (the output's shape) give each group's first input element; the
// reduced axes are extra[1] dims with sizes extra[2..9] and input strides extra[10..17]; extra[0]
// elements are reduced. Sums use subgroupAdd where the device has subgroup arithmetic (-DSUBGROUP),
// else a shared-memory tree; max/min always use the tree (it propagates NaN like the CPU backend).
#extension GL_GOOGLE_include_directive : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
#include "group_id.glsl"
layout(std430, binding = 1) readonly buffer In0 { T x[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
shared T part[256];

T combine(int op, T a, T b) {
  if (op == 2) return isnan(a) || isnan(b) ? a + b : max(a, b);
  if (op == 3) return isnan(a) || isnan(b) ? a + b : min(a, b);
  return a + b;
}

void main() {
  uint o = group_id();
  if (o >= P.n) return;  // uniform across the group
  int op = P.iattr[0];
  uint base = offset_of(0, o);
  uint r = P.extra[0], rnd = P.extra[1];
  uint t = gl_LocalInvocationID.x;
  T acc = op == 2 ? neg_inf_T() : op == 3 ? pos_inf_T() : 0.0;
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
      T total = 0.0;
      for (uint i = 0; i < gl_NumSubgroups; ++i) total += part[i];
      y[offset_of(6, o)] = op == 1 ? total / T(r) : op == 4 ? sqrt(total) : total;
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
    T total = part[0];
    y[offset_of(6, o)] = op == 1 ? total / T(r) : op == 4 ? sqrt(total) : total;
  }
}
