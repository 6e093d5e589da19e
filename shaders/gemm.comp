#version 450
// GEMM and the convolutions as implicit GEMMs: Y[m, j] = sum_k A[m, k] B[k, j], one shader, MODE picks
// what A, B and Y are (the im2col matrix of a convolution is never stored: B's elements are gathered
// from the image as the k loop reaches them).
//   MODE 0 matmul            A = a (M x K), B = b (K x N), Y = y; gl_WorkGroupID.z = batch
//   MODE 1 conv2d            A = w as K x (C R S), B = im2col(x) (C R S) x (N P Q), Y = y (+ bias)
//   MODE 2 conv2d_bwd_data   A = w as C x (K R S), B = "col2im"(dy) (K R S) x (N H W), Y = dx
//   MODE 3 conv2d_bwd_weight A = dy as K x (N P Q), B = im2col(x)^T (N P Q) x (C R S), Y = dw
//
// Tiling: a workgroup of 64 invocations computes a 16 x 256 block of Y; each invocation owns 4 adjacent
// columns (a vec4) of all 16 rows, i.e. 16 vec4 accumulators in registers. A 16 x 32 slice of A is
// staged in shared memory per step, and every invocation reads it at the same address (a broadcast:
// one scalar load on lavapipe, a single transaction or the scalar cache on a GPU); B is read straight
// from memory, each element once per workgroup, as a vec4 where the host says it is contiguous and
// aligned (-DVEC4). On lavapipe, where a memory access at per-invocation addresses costs a loop over
// the lanes but arithmetic is 8-wide SIMD, this makes 64 multiply-adds per 4 lane-varying loads.
// Everything in the k loop is incremental: no divisions per step (integer division is not vectorised).
//
// Parameters: extra[0..2] = M, N (columns), K (the summed length). MODE 0: element strides a at
// strides[0..2] = (batch, m, k), b at strides[8..10] = (batch, k, n), y at strides[48..50] =
// (batch, m, n), transposes folded in on the host. MODE 1..3: extra[3..15] = batch N, C, H, W, K, P, Q,
// R, S, stride h, stride w, pad h, pad w; operands' NCHW strides as at4 reads them: MODE 1: 0 x, 1 w,
// 2 bias (iattr[0] = has bias), 6 y; MODE 2: 0 dy, 1 w, 6 dx; MODE 3: 0 dy, 1 x, 6 dw.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 64) in;
#include "common.glsl"
#include "real.glsl"
#include "nchw.glsl"
#ifdef F64
#define V4 dvec4
#else
#define V4 vec4
#endif
#if defined(VEC4) && MODE == 0
layout(std430, binding = 1) readonly buffer In0 { T a[]; };
layout(std430, binding = 2) readonly buffer In1 { V4 b4[]; };
#else
layout(std430, binding = 1) readonly buffer In0 { T in0[]; };
layout(std430, binding = 2) readonly buffer In1 { T in1[]; };
#endif
layout(std430, binding = 3) readonly buffer In2 { T bias[]; };
layout(std430, binding = 7) writeonly buffer Out0 { T y[]; };

#ifndef ROWS
#define ROWS 16
#endif
const uint TM = ROWS, BK = 32, WG = 64;  // ROWS: 16 (matmul) or 32 (convolutions: -DROWS=32)
shared V4 As[BK][TM / 4];  // [k][rows / 4]: read as vec4s

// Convolution sizes (MODE 1..3).
uint cN() { return P.extra[3]; }
uint cC() { return P.extra[4]; }
int cH() { return int(P.extra[5]); }
int cW() { return int(P.extra[6]); }
uint cK() { return P.extra[7]; }
uint cP() { return P.extra[8]; }
uint cQ() { return P.extra[9]; }
uint cR() { return P.extra[10]; }
uint cS() { return P.extra[11]; }
int csh() { return int(P.extra[12]); }
int csw() { return int(P.extra[13]); }
int cph() { return int(P.extra[14]); }
int cpw() { return int(P.extra[15]); }

// A[m, k] (staging only: divisions are fine here).
T load_a(uint m, uint k, int bz) {
#if MODE == 0
#ifdef VEC4
  return a[P.off[0] + bz * P.strides[0] + int(m) * P.strides[1] + int(k) * P.strides[2]];
#else
  return in0[P.off[0] + bz * P.strides[0] + int(m) * P.strides[1] + int(k) * P.strides[2]];
#endif
#elif MODE == 1
  uint rs = cR() * cS(), c = k / rs, r = (k % rs) / cS(), s = k % cS();
  return in1[at4(1, m, c, r, s)];
#elif MODE == 2
  uint rs = cR() * cS(), kk = k / rs, r = (k % rs) / cS(), s = k % cS();
  return in1[at4(1, kk, m, r, s)];
#else
  uint pq = cP() * cQ(), n = k / pq, p = (k % pq) / cQ(), q = k % cQ();
  return in0[at4(0, n, m, p, q)];
#endif
}

void main() {
  const uint M = P.extra[0], N = P.extra[1], K = P.extra[2];
  const uint lid = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.y * TM;
  const uint col = gl_WorkGroupID.x * (4 * WG) + 4 * lid;  // this invocation's first column
  const int bz = int(gl_WorkGroupID.z);

  // Per-column state of the B gather, set up once (the divisions happen here, not in the k loop).
  bool valid[4];
  int base[4], hb[4], wb[4], obase[4];  // gather base, window origin, output offset (row 0)
  for (int j = 0; j < 4; ++j) {
    uint cj = col + uint(j);
    valid[j] = cj < N;
    if (!valid[j]) cj = 0;
#if MODE == 0
    base[j] = P.off[1] + bz * P.strides[8] + int(cj) * P.strides[10];
    hb[j] = 0;
    wb[j] = 0;
    obase[j] = P.off[6] + bz * P.strides[48] + int(cj) * P.strides[50];
#elif MODE == 1  // column = (n, p, q): the image window at (p sh - ph, q sw - pw)
    uint pq = cP() * cQ(), n = cj / pq, p = (cj % pq) / cQ(), q = cj % cQ();
    base[j] = P.off[0] + int(n) * P.strides[0];
    hb[j] = int(p) * csh() - cph();
    wb[j] = int(q) * csw() - cpw();
    obase[j] = at4(6, n, 0, p, q);
#elif MODE == 2  // column = (n, h, w) of dx: dy[n, k, (h + ph - r) / sh, (w + pw - s) / sw]
    uint hw = uint(cH() * cW()), n = cj / hw, h = (cj % hw) / uint(cW()), w = cj % uint(cW());
    base[j] = P.off[0] + int(n) * P.strides[0];
    hb[j] = int(h) + cph();
    wb[j] = int(w) + cpw();
    obase[j] = at4(6, n, 0, h, w);
#else  // column = (c, r, s) of dw: x[n, c, p sh - ph + r, q sw - pw + s]
    uint rs = cR() * cS(), c = cj / rs, r = (cj % rs) / cS(), s = cj % cS();
    base[j] = P.off[1] + int(c) * P.strides[9];
    hb[j] = int(r) - cph();
    wb[j] = int(s) - cpw();
    obase[j] = at4(6, 0, c, r, s);
#endif
  }

  // The k loop's position as (u0, u1, u2), advanced without divisions: MODE 1 (c, r, s), MODE 2
  // (k, r, s), MODE 3 (n, p, q).
#if MODE == 1 || MODE == 2
  const uint D1 = cR(), D2 = cS();
#elif MODE == 3
  const uint D1 = cP(), D2 = cQ();
#endif
  uint u0 = 0, u1 = 0, u2 = 0;
  const bool unit_stride = P.extra[12] == 1u && P.extra[13] == 1u;

  V4 acc[TM];
  [[unroll]] for (uint i = 0; i < TM; ++i) acc[i] = V4(0.0);

  for (uint t = 0; t < K; t += BK) {
    for (uint l = lid; l < BK * TM; l += WG) {
      uint kk = l / TM, i = l % TM;
      uint gm = row0 + i, gk = t + kk;
      As[kk][i / 4][i % 4] = (gm < M && gk < K) ? load_a(gm, gk, bz) : T(0.0);
    }
    barrier();
    const uint kend = min(BK, K - t);
    for (uint kk = 0; kk < kend; ++kk) {
      V4 bv = V4(0.0);
#if MODE == 0
#ifdef VEC4
      if (valid[0]) bv = b4[(base[0] + int(t + kk) * P.strides[9]) >> 2];
#else
      const int koff = int(t + kk) * P.strides[9];
      [[unroll]] for (int j = 0; j < 4; ++j)
        if (valid[j]) bv[j] = in1[base[j] + koff];
#endif
#elif MODE == 1
      const int coff = int(u0) * P.strides[1];
      [[unroll]] for (int j = 0; j < 4; ++j) {
        int h = hb[j] + int(u1), w = wb[j] + int(u2);
        if (valid[j] && h >= 0 && h < cH() && w >= 0 && w < cW())
          bv[j] = in0[base[j] + coff + h * P.strides[2] + w * P.strides[3]];
      }
#elif MODE == 2
      const int koff = int(u0) * P.strides[1];
      [[unroll]] for (int j = 0; j < 4; ++j) {
        int ph_ = hb[j] - int(u1), qw = wb[j] - int(u2);  // = p sh, q sw
        int p = ph_, q = qw;
        bool ok = valid[j] && ph_ >= 0 && qw >= 0;
        if (!unit_stride) {
          ok = ok && ph_ % csh() == 0 && qw % csw() == 0;
          p = ph_ / csh();
          q = qw / csw();
        }
        if (ok && p < int(cP()) && q < int(cQ())) bv[j] = in0[base[j] + koff + p * P.strides[2] + q * P.strides[3]];
      }
#else
      const int noff = int(u0) * P.strides[8], hp = int(u1) * csh(), wq = int(u2) * csw();
      [[unroll]] for (int j = 0; j < 4; ++j) {
        int h = hb[j] + hp, w = wb[j] + wq;
        if (valid[j] && h >= 0 && h < cH() && w >= 0 && w < cW())
          bv[j] = in1[base[j] + noff + h * P.strides[10] + w * P.strides[11]];
      }
#endif
#if MODE != 0
      if (++u2 == D2) {
        u2 = 0;
        if (++u1 == D1) {
          u1 = 0;
          ++u0;
        }
      }
#endif
      [[unroll]] for (uint g = 0; g < TM / 4; ++g) {
        const V4 av = As[kk][g];
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[4 * g + c] += av[c] * bv;
      }
    }
    barrier();
  }

  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = row0 + i;
    if (m >= M) break;
    // Output row stride: y's m (MODE 0), y's and dx's channel, dw's k.
#if MODE == 0
    const int om = int(m) * P.strides[49];
#elif MODE == 3
    const int om = int(m) * P.strides[48];
#else
    const int om = int(m) * P.strides[49];
#endif
#if MODE == 1
    const bool has_bias = P.iattr[0] != 0;
    const T bm = has_bias ? bias[P.off[2] + int(m) * P.strides[16]] : T(0.0);
    [[unroll]] for (int j = 0; j < 4; ++j)
      if (valid[j]) y[obase[j] + om] = has_bias ? acc[i][j] + bm : acc[i][j];
#else
    [[unroll]] for (int j = 0; j < 4; ++j)
      if (valid[j]) y[obase[j] + om] = acc[i][j];
#endif
  }
}
