#version 450
// SGD (MODE 0), SGD with momentum (MODE 1), Adam (MODE 2), in place on w (operand 0) and the state
// buffers; formulas as the CPU backend's. fattr: lr, momentum/beta1, beta2, eps, wd, corr1, corr2.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "real.glsl"
layout(std430, binding = 1) buffer In0 { T w[]; };
layout(std430, binding = 2) readonly buffer In1 { T g[]; };
layout(std430, binding = 3) buffer In2 { T m[]; };
layout(std430, binding = 4) buffer In3 { T v[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uint ow = offset_of(0, i), og = offset_of(1, i);
  T wv = w[ow], gv = g[og];
#if MODE == 0
  T lr = sattr(0), wd = sattr(1);
  w[ow] = wv - lr * (gv + wd * wv);
#elif MODE == 1
  T lr = sattr(0), mu = sattr(1), wd = sattr(2);
  uint om = offset_of(2, i);
  T mv = mu * m[om] - lr * (gv + wd * wv);
  m[om] = mv;
  w[ow] = wv + mv;
#else
  T lr = sattr(0), b1 = sattr(1), b2 = sattr(2), eps = sattr(3), wd = sattr(4);
#ifdef F64
  T c1 = sattr(5), c2 = sattr(6), ob1 = 1.0LF - b1, ob2 = 1.0LF - b2;
#else
  T c1 = sattr(5), c2 = sattr(6), ob1 = sattr(7), ob2 = uintBitsToFloat(P.extra[0]);
#endif
  uint om = offset_of(2, i), ov = offset_of(3, i);
  T gd = gv + wd * wv;
  T mv = b1 * m[om] + ob1 * gd;
  T vv = b2 * v[ov] + ob2 * gd * gd;
  m[om] = mv;
  v[ov] = vv;
  w[ow] = wv - lr * (mv * c1) / (sqrt(vv * c2) + eps);
#endif
}
