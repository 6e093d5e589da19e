#version 450
// MATMUL, tiled: each 16x16 workgroup computes a 16x16 block of one batch's output, staging 16x16
// tiles of a and b through shared memory. extra[0..2] = M, N, K; strides (elements): a at
// strides[0..2] = (batch, m, k), b at strides[8..10] = (batch, k, n), out at strides[48..50] =
// (batch, m, n); transposes are folded into the strides on the host. gl_WorkGroupID.z = batch.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
#include "common.glsl"
layout(std430, binding = 1) readonly buffer In0 { float a[]; };
layout(std430, binding = 2) readonly buffer In1 { float b[]; };
layout(std430, binding = 7) writeonly buffer Out0 { float y[]; };
shared float As[16][17];
shared float Bs[16][17];

void main() {
  uint M = P.extra[0], N = P.extra[1], K = P.extra[2];
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint row = gl_WorkGroupID.y * 16 + ly, col = gl_WorkGroupID.x * 16 + lx;
  int bz = int(gl_WorkGroupID.z);
  int abase = P.off[0] + bz * P.strides[0], bbase = P.off[1] + bz * P.strides[8];
  int sam = P.strides[1], sak = P.strides[2], sbk = P.strides[9], sbn = P.strides[10];
  float acc = 0.0;
  for (uint t = 0; t < K; t += 16) {
    uint ka = t + lx, kb = t + ly;
    As[ly][lx] = (row < M && ka < K) ? a[abase + int(row) * sam + int(ka) * sak] : 0.0;
    Bs[ly][lx] = (kb < K && col < N) ? b[bbase + int(kb) * sbk + int(col) * sbn] : 0.0;
    barrier();
    for (uint k = 0; k < 16; ++k) acc += As[ly][k] * Bs[k][lx];
    barrier();
  }
  if (row < M && col < N) y[P.off[6] + bz * P.strides[48] + int(row) * P.strides[49] + int(col) * P.strides[50]] = acc;
}
