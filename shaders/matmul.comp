#version 450
// MATMUL, tiled: a 16x16 workgroup computes a 64x64 block of one batch's output, each invocation a
// 4x4 register tile (rows ly + 16 i, columns lx + 16 j), staging 64x16 slices of a and 16x64 slices
// of b through shared memory. Register tiling cuts barriers and shared-memory traffic per
// multiply-add 16-fold against one output per invocation, which matters most on lavapipe (where a
// barrier switches between invocations in software) and on GPUs alike.
// extra[0..2] = M, N, K; element strides: a at strides[0..2] = (batch, m, k), b at strides[8..10] =
// (batch, k, n), out at strides[48..50] = (batch, m, n); transposes are folded into the strides on the
// host. gl_WorkGroupID.z = batch.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
#include "common.glsl"
#include "real.glsl"
layout(std430, binding = 1) readonly buffer In0 { T a[]; };
layout(std430, binding = 2) readonly buffer In1 { T b[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };
shared T As[16][65];  // [k][m]
shared T Bs[16][65];  // [k][n]

void main() {
  uint M = P.extra[0], N = P.extra[1], K = P.extra[2];
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y, lid = ly * 16 + lx;
  uint row0 = gl_WorkGroupID.y * 64, col0 = gl_WorkGroupID.x * 64;
  int bz = int(gl_WorkGroupID.z);
  int abase = P.off[0] + bz * P.strides[0], bbase = P.off[1] + bz * P.strides[8];
  int sam = P.strides[1], sak = P.strides[2], sbk = P.strides[9], sbn = P.strides[10];
  T acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint t = 0; t < K; t += 16) {
    for (uint l = 0; l < 4; ++l) {
      uint idx = lid + 256 * l;
      uint am = idx / 16, ak = idx % 16;
      uint gm = row0 + am, gk = t + ak;
      As[ak][am] = (gm < M && gk < K) ? a[abase + int(gm) * sam + int(gk) * sak] : 0.0;
      uint bk = idx / 64, bn = idx % 64;
      uint hk = t + bk, hn = col0 + bn;
      Bs[bk][bn] = (hk < K && hn < N) ? b[bbase + int(hk) * sbk + int(hn) * sbn] : 0.0;
    }
    barrier();
    for (uint k = 0; k < 16; ++k) {
      T av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[k][ly + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[k][lx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    uint r = row0 + ly + 16 * i;
    if (r >= M) continue;
    for (int j = 0; j < 4; ++j) {
      uint c = col0 + lx + 16 * j;
      if (c < N) y[P.off[6] + bz * P.strides[48] + int(r) * P.strides[49] + int(c) * P.strides[50]] = acc[i][j];
    }
  }
}
