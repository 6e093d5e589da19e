#version 450
// Integer elementwise kernels, int32 or int64 (-DI64, needs shaderInt64), wrapping like the CPU
// backend. MODE 0 fill (value in extra[0..1] as int64 bits), 1 unary (iattr[0] = neg, abs, relu,
// square or sign), 2 binary (iattr[0] = add, sub, mul, max, min, equal, less, greater, floor_divide,
// mod; the runtime refuses integer div and pow), 3 binary with a scalar (extra[0..1], iattr[1] =
// reverse), 4 arange
// (start and step, integers the runtime checked every value against, as doubles in dattr; start + k *
// step in integers, wrapping, exact past 2^53 as the CPU backend; needs shaderFloat64).
#extension GL_GOOGLE_include_directive : require
#ifdef I64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
layout(local_size_x = 256) in;
#include "common.glsl"
#ifdef I64
#define I int64_t
I scalar_i() { return I(uint64_t(P.extra[0]) | (uint64_t(P.extra[1]) << 32)); }
#else
#define I int
I scalar_i() { return int(P.extra[0]); }
#endif
layout(std430, binding = 1) readonly buffer In0 { I a[]; };
layout(std430, binding = 2) readonly buffer In1 { I b[]; };
layout(std430, binding = 7) writeonly buffer Out0 { I y[]; };
// floor_divide and mod by zero set the error word, which the queue turns into BRAID_ERR_KERNEL.
layout(std430, binding = 10) buffer Err { uint err; };

// Python's // and % (the quotient toward -inf, the remainder with z's sign), as the CPU backend:
// INT_MIN // -1 wraps; the quotient from a division that truncates, the remainder from it.
I floor_divide_or_mod(bool mod, I x, I z) {
  if (z == I(0)) {
    atomicOr(err, 1u);
    return I(0);
  }
  if (z == I(-1)) return mod ? I(0) : -x;
  I q = x / z, r = x - q * z;
  bool adjust = r != I(0) && ((r < I(0)) != (z < I(0)));
  return mod ? (adjust ? r + z : r) : (adjust ? q - I(1) : q);
}

I unary_op(int op, I v) {
  switch (op) {
    case 0: return -v;
    case 1: return v < I(0) ? -v : v;
    case 5: return v < I(0) ? I(0) : v;
    case 8: return v * v;
    default: return v > I(0) ? I(1) : v < I(0) ? I(-1) : I(0);
  }
}

I binary_op(int op, I x, I z) {
  switch (op) {
    case 0: return x + z;
    case 1: return x - z;
    case 2: return x * z;
    case 5: return max(x, z);
    case 6: return min(x, z);
    case 7: return x == z ? I(1) : I(0);
    case 8: return x < z ? I(1) : I(0);
    case 9: return x > z ? I(1) : I(0);
    default: return floor_divide_or_mod(op == 11, x, z);
  }
}

void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uint o = offset_of(6, i);
#if MODE == 0
  y[o] = scalar_i();
#elif MODE == 1
  y[o] = unary_op(P.iattr[0], a[offset_of(0, i)]);
#elif MODE == 2
  y[o] = binary_op(P.iattr[0], a[offset_of(0, i)], b[offset_of(1, i)]);
#elif MODE == 4
  double start = packDouble2x32(uvec2(P.dattr[0], P.dattr[1])), step = packDouble2x32(uvec2(P.dattr[2], P.dattr[3]));
#ifdef I64
  y[o] = I(uint64_t(int64_t(start)) + uint64_t(i) * uint64_t(int64_t(step)));
#else
  y[o] = int(uint(int(start)) + i * uint(int(step)));
#endif
#else
  I v = a[offset_of(0, i)], s = scalar_i();
  y[o] = P.iattr[1] != 0 ? binary_op(P.iattr[0], s, v) : binary_op(P.iattr[0], v, s);
#endif
}
