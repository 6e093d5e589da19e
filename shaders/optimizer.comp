#version 450
// SGD (MODE 0), SGD with momentum (MODE 1), Adam (MODE 2), in place on w (operand 0) and the state
// buffers; formulas as the CPU backend's. fattr: lr, momentum/beta1, beta2, eps, wd, corr1, corr2.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, binding = 1) buffer In0 { float w[]; };
layout(std430, binding = 2) readonly buffer In1 { float g[]; };
layout(std430, binding = 3) buffer In2 { float m[]; };
layout(std430, binding = 4) buffer In3 { float v[]; };
void main() {
  uint i = flat_id();
  if (i >= P.n) return;
  uint ow = offset_of(0, i), og = offset_of(1, i);
  float wv = w[ow], gv = g[og];
#if MODE == 0
  float lr = P.fattr[0], wd = P.fattr[1];
  w[ow] = wv - lr * (gv + wd * wv);
#elif MODE == 1
  float lr = P.fattr[0], mu = P.fattr[1], wd = P.fattr[2];
  uint om = offset_of(2, i);
  float mv = mu * m[om] - lr * (gv + wd * wv);
  m[om] = mv;
  w[ow] = wv + mv;
#else
  float lr = P.fattr[0], b1 = P.fattr[1], b2 = P.fattr[2], eps = P.fattr[3], wd = P.fattr[4];
  float c1 = P.fattr[5], c2 = P.fattr[6], ob1 = P.fattr[7], ob2 = uintBitsToFloat(P.extra[0]);
  uint om = offset_of(2, i), ov = offset_of(3, i);
  float gd = gv + wd * wv;
  float mv = b1 * m[om] + ob1 * gd;
  float vv = b2 * v[ov] + ob2 * gd * gd;
  m[om] = mv;
  v[ov] = vv;
  w[ow] = wv - lr * (mv * c1) / (sqrt(vv * c2) + eps);
#endif
}
