#version 450
// TAKE and TAKE_BWD (abi/braid_backend.h, "Indexing kernels"), x and out contiguous [outer, n or m,
// inner], the index [m] int32, or int64 with -DI64 (read as pairs of 32-bit words, low first). extra[0]
// = m, extra[1] = n, extra[2] = inner. An index outside [-n, n) sets the error word (binding 10),
// which the queue turns into BRAID_ERR_KERNEL.
//  MODE 0 (TAKE): one invocation per output element; its bits copied from x (W: 32-bit words, or
//         64-bit pairs with -DWIDE), any dtype of those widths.
//  MODE 1 (TAKE_BWD): one invocation per dx element [o, r, k], summing dy[o, j, k] over the j whose index
//         is r in increasing j (T: float, or double with -DF64): deterministic, no atomics.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#if MODE == 1
#include "real.glsl"
#define W T
#elif defined(WIDE)
#define W uvec2
#else
#define W uint
#endif
layout(std430, binding = 1) readonly buffer In0 { W x[]; };
layout(std430, binding = 2) readonly buffer In1 { int index[]; };
layout(std430, binding = 7) writeonly buffer Out0 { W y[]; };
layout(std430, binding = 10) buffer Err { uint err; };

// index[j] wrapped into [0, n), or -1 when it is outside [-n, n).
int row_of(uint j, uint n) {
#ifdef I64
  int lo = index[P.off[1] + 2 * int(j)], hi = index[P.off[1] + 2 * int(j) + 1];
  // An int64 within [-n, n) has a high word of 0 (>= 0) or -1 (< 0) matching the low word's sign.
  bool fits = (hi == 0 && lo >= 0) || (hi == -1 && lo < 0);
  int i = fits ? lo : int(0x80000000u);
#else
  int i = index[P.off[1] + int(j)];
#endif
  if (i < -int(n) || i >= int(n)) return -1;
  return i < 0 ? i + int(n) : i;
}

void main() {
  uint t = flat_id();
  if (t >= P.n) return;
  uint m = P.extra[0], n = P.extra[1], inner = P.extra[2];
  uint k = t % inner;
#if MODE == 0
  uint j = (t / inner) % m, o = t / (inner * m);
  int r = row_of(j, n);
  if (r < 0) {
    atomicOr(err, 1u);
    y[P.off[6] + int(t)] = W(0);
    return;
  }
  y[P.off[6] + int(t)] = x[P.off[0] + int((o * n + uint(r)) * inner + k)];
#else
  uint r = (t / inner) % n, o = t / (inner * n);
  T sum = T(0);
  for (uint j = 0u; j < m; ++j) {
    int rj = row_of(j, n);
    if (rj < 0) atomicOr(err, 1u);
    if (rj == int(r)) sum += x[P.off[0] + int((o * m + j) * inner + k)];
  }
  y[P.off[6] + int(t)] = sum;
#endif
}
