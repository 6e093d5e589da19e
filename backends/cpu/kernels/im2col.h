// im2col and col2im for CONV2D and its backward kernels. The column matrix of a group of g images is
// [C*R*S, g*P*Q]: row (ci, r, s), column img*P*Q + p*Q + q holds x[img][ci][p*sh - ph + r][q*sw - pw + s]
// (zero outside the image). Images side by side keep gemm's N dimension wide (see conv_pool.cpp).
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include <cstring>
#include <type_traits>
#include <vector>

namespace braid::cpu::kern {

struct ConvGeom {
  int64_t N, C, H, W, K, R, S, P, Q, sh, sw, ph, pw;
  int64_t crs() const { return C * R * S; }
  int64_t pq() const { return P * Q; }
  int64_t hw() const { return H * W; }
};

// ---- groups of images ------------------------------------------------------------------------------
// The conv kernels (forward, data and weight gradients) run im2col/col2im and one gemm per group of
// images. Groups are spread over the cores: `parts` contiguous runs of groups, each run on one core
// with its own scratch, its im2col and gemm single-threaded, so a group's column matrix is written and
// read by the same core while it sits in that core's L2. With fewer groups than cores (few or big
// images) the groups run one after another instead, each fanned out over all the cores.

// Column-matrix elements per group: 1 MiB of float, one core's L2 here. (8 MiB groups were 1.3-1.8x
// slower for LeNet's second conv on this machine.)
inline constexpr int64_t kColBudget = int64_t{1} << 18;

struct GroupPlan {
  int64_t size;    // images per group: column matrix and the gemm's other operand within kColBudget
  int64_t groups;  // ceil(N / size)
  int64_t parts;   // runs of groups in parallel (1: groups in turn, each over all the cores)
};

inline GroupPlan plan_groups(const Exec& ex, const ConvGeom& G) {
  GroupPlan p{};
  p.size = std::clamp<int64_t>(kColBudget / std::max<int64_t>(1, std::max(G.crs(), G.K) * G.pq()), 1,
                               std::max<int64_t>(G.N, 1));
  p.groups = (G.N + p.size - 1) / p.size;
  const int64_t cores = ex.concurrency();
  // Two runs per core, so a core the hypervisor (or another device) slows down holds back less.
  p.parts = cores > 1 && p.groups >= cores ? std::min(p.groups, 2 * cores) : 1;
  return p;
}

struct ImageGroup {
  int64_t n0, g;  // images n0 .. n0+g-1
  int64_t part;   // the run it belongs to: picks the run's scratch
  bool first;     // the run's first group
};

// Calls body(on, group) for every group of the plan; `on` is the Exec the body fans out with (a
// SerialExec inside a run, `ex` when parts == 1). The runs are fixed by the shape and core count.
template <class F>
void for_each_group(Exec& ex, const ConvGeom& G, const GroupPlan& plan, F&& body) {
  auto run = [&](Exec& on, int64_t part, int64_t g0, int64_t g1) {
    for (int64_t grp = g0; grp < g1; ++grp) {
      const int64_t n0 = grp * plan.size;
      body(on, ImageGroup{n0, std::min(plan.size, G.N - n0), part, grp == g0});
    }
  };
  if (plan.parts <= 1) {
    run(ex, 0, 0, plan.groups);
    return;
  }
  parallel(ex, plan.parts, 1, [&](int64_t b, int64_t e) {
    SerialExec serial;
    for (int64_t part = b; part < e; ++part)
      run(serial, part, part * plan.groups / plan.parts, (part + 1) * plan.groups / plan.parts);
  });
}

// Output indices q in [q0, q1) read input columns q*stride - pad + offset inside [0, size).
inline void valid_range(int64_t size, int64_t out, int64_t stride, int64_t pad, int64_t offset, int64_t& q0,
                        int64_t& q1) {
  const int64_t lo = pad - offset;             // need q*stride >= lo
  const int64_t hi = size - 1 + pad - offset;  // need q*stride <= hi
  q0 = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  q1 = hi < 0 ? 0 : std::min(out, hi / stride + 1);
  q0 = std::min(q0, out);
  q1 = std::max(q1, q0);
}

// Short runs (a conv's output rows: 9 to a few dozen elements). std::copy becomes a memmove call (GCC
// may turn a plain copy loop into one too), which for LeNet's 9-float rows cost more than the copied data
// (with im2col's per-row bookkeeping, a third of the second conv's time in perf); fixed-size chunks
// compile to plain vector moves.
template <class T>
inline void copy_run(T* __restrict d, const T* __restrict s, int64_t n) {
  constexpr int64_t L = 32 / sizeof(T);
  int64_t i = 0;
  for (; i + L <= n; i += L) std::memcpy(d + i, s + i, 32);
  if (i + L / 2 <= n) std::memcpy(d + i, s + i, 16), i += L / 2;
  for (; i < n; ++i) d[i] = s[i];
}

// d[i] += s[i] over a short run, in 16-byte vectors (the compiler versions a plain loop for aliasing
// and falls back to scalars on runs this short).
template <class T>
inline void add_run(T* __restrict d, const T* __restrict s, int64_t n) {
  typedef T V __attribute__((vector_size(16)));
  constexpr int64_t L = 16 / sizeof(T);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V a, b;
    std::memcpy(&a, d + i, 16);
    std::memcpy(&b, s + i, 16);
    a += b;
    std::memcpy(d + i, &a, 16);
  }
  for (; i < n; ++i) d[i] += s[i];
}

// Fills col ([CRS, g*PQ]) from images n0 .. n0+g-1 of x, in parallel over rows and images.
template <class T>
void im2col(Exec& ex, const ConvGeom& G, const T* x, int64_t n0, int64_t g, T* col) {
  const int64_t PQ = G.pq(), HW = G.hw(), ld = g * PQ, R = G.R, S = G.S, P = G.P, Q = G.Q, W = G.W;
  if (G.sh == 1 && G.sw == 1) {
    // Stride 1 (the common case): a task per (channel, image) plane writes its R*S rows, so the ranges
    // are worked out once per tap instead of once per row with divisions; with LeNet's 9-wide rows the
    // per-row bookkeeping cost as much as the copying.
    parallel(ex, G.C * g, std::max<int64_t>(1, kGrain / std::max<int64_t>(R * S * PQ, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t ci = t / g, img = t % g;
        const T* xp = x + ((n0 + img) * G.C + ci) * HW;
        for (int64_t r = 0; r < R; ++r) {
          const int64_t p0 = std::clamp<int64_t>(G.ph - r, 0, P), p1 = std::clamp<int64_t>(G.H + G.ph - r, p0, P);
          for (int64_t s = 0; s < S; ++s) {
            const int64_t q0 = std::clamp<int64_t>(G.pw - s, 0, Q), q1 = std::clamp<int64_t>(W + G.pw - s, q0, Q);
            T* dst = col + ((ci * R + r) * S + s) * ld + img * PQ;
            if (p0 > 0) std::fill_n(dst, p0 * Q, T(0));
            const T* src = xp + (r - G.ph) * W + (s - G.pw);  // pixel of output (0, 0)
            for (int64_t p = p0; p < p1; ++p) {
              T* d = dst + p * Q;
              if (q0 > 0) std::fill_n(d, q0, T(0));
              copy_run(d + q0, src + p * W + q0, q1 - q0);
              if (q1 < Q) std::fill(d + q1, d + Q, T(0));
            }
            if (p1 < P) std::fill(dst + p1 * Q, dst + PQ, T(0));
          }
        }
      }
    });
    return;
  }
  parallel(ex, G.crs() * g, std::max<int64_t>(1, kGrain / std::max<int64_t>(PQ, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t row = t / g, img = t % g;
      const int64_t ci = row / (R * S), r = (row / S) % R, s = row % S;
      const T* xp = x + ((n0 + img) * G.C + ci) * HW;
      T* dst = col + row * ld + img * PQ;
      int64_t q0, q1, p0, p1;
      valid_range(W, Q, G.sw, G.pw, s, q0, q1);
      valid_range(G.H, P, G.sh, G.ph, r, p0, p1);
      std::fill_n(dst, p0 * Q, T(0));
      for (int64_t p = p0; p < p1; ++p) {
        T* d = dst + p * Q;
        const T* src = xp + (p * G.sh - G.ph + r) * W;  // input row; column of q is q*sw - pw + s
        if (q0 > 0) std::fill_n(d, q0, T(0));
        if (G.sw == 1)
          copy_run(d + q0, src + (q0 - G.pw + s), q1 - q0);
        else
          for (int64_t q = q0; q < q1; ++q) d[q] = src[q * G.sw - G.pw + s];
        if (q1 < Q) std::fill(d + q1, d + Q, T(0));
      }
      std::fill(dst + p1 * Q, dst + PQ, T(0));
    }
  });
}

// ---- col2im, stride 1, narrow rows ----------------------------------------------------------------
// With LeNet's 9-wide output rows the generic col2im below spends its time on 225 short adds per plane.
// For stride 1 and padded rows of at most kCol2imMaxRow elements, each padded dx row is a few whole
// vectors held in a plane buffer: the contribution of tap (r, s) to row p + r is ONE vector load per
// row vector, starting s elements early and masked to the Q valid lanes, so no add is shorter than a
// vector. The loads run up to kCol2imMargin elements outside a (ci, r, s) block, so the caller's column
// buffer has that many zeroed elements before and after it (col2im_margin).
inline constexpr int64_t kCol2imMaxRow = 64;
inline constexpr int64_t kCol2imMargin = kCol2imMaxRow;

inline bool col2im_vector_path(const ConvGeom& G) {
  return G.sh == 1 && G.sw == 1 && G.W + 2 * G.pw <= kCol2imMaxRow && G.S <= kCol2imMargin;
}

template <class T>
using LaneMask = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

// masks [S, Wv]: all bits set in lane w of tap s's row when w - s is an output column (in [0, Q)).
template <class T>
BRAID_HOT void col2im_s1_plane(const ConvGeom& G, const T* __restrict col, int64_t ld, T* __restrict dxp, int64_t Wv,
                               const LaneMask<T>* masks) {
  typedef T V __attribute__((vector_size(32)));
  typedef LaneMask<T> M __attribute__((vector_size(32)));
  constexpr int64_t L = 32 / sizeof(T), kMaxVec = kCol2imMaxRow / L;
  const int64_t R = G.R, S = G.S, P = G.P, Q = G.Q, NV = Wv / L;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t s = 0; s < S; ++s) {
      M mask[kMaxVec];
      std::memcpy(mask, masks + s * Wv, size_t(NV) * sizeof(M));
      const T* blk = col + (r * S + s) * ld;
      for (int64_t p = 0; p < P; ++p) {
        const T* src = blk + p * Q - s;
        T* row = dxp + (p + r) * Wv;
        for (int64_t j = 0; j < NV; ++j) {
          V v, d;
          std::memcpy(&v, src + j * L, sizeof(V));
          std::memcpy(&d, row + j * L, sizeof(V));
          M bits;
          std::memcpy(&bits, &v, sizeof(V));
          bits &= mask[j];
          std::memcpy(&v, &bits, sizeof(V));
          d += v;
          std::memcpy(row + j * L, &d, sizeof(V));
        }
      }
    }
}

// Stride-1 col2im through col2im_s1_plane; col needs col2im_margin (see above).
template <class T>
void col2im_s1(Exec& ex, const ConvGeom& G, const T* col, int64_t n0, int64_t g, T* dx) {
  constexpr int64_t L = 32 / sizeof(T);
  const int64_t PQ = G.pq(), HW = G.hw(), ld = g * PQ, RS = G.R * G.S;
  const int64_t Hp = G.H + 2 * G.ph, Wv = (G.W + 2 * G.pw + L - 1) / L * L;
  std::vector<LaneMask<T>> masks(size_t(G.S * Wv));
  for (int64_t s = 0; s < G.S; ++s)
    for (int64_t w = 0; w < Wv; ++w) masks[size_t(s * Wv + w)] = (w - s >= 0 && w - s < G.Q) ? LaneMask<T>(-1) : 0;
  parallel(ex, g * G.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(RS * PQ, 1)), [&](int64_t b, int64_t e) {
    std::vector<T> dxp(size_t(Hp * Wv));
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / G.C, ci = t % G.C;
      std::fill(dxp.begin(), dxp.end(), T(0));
      col2im_s1_plane(G, col + ci * RS * ld + img * PQ, ld, dxp.data(), Wv, masks.data());
      T* xp = dx + ((n0 + img) * G.C + ci) * HW;
      for (int64_t h = 0; h < G.H; ++h) copy_run(xp + h * G.W, dxp.data() + (h + G.ph) * Wv + G.pw, G.W);
    }
  });
}

// The adjoint of im2col: dx[n0+img] = sum over rows (ci, r, s) of col scattered back to the pixels they
// were read from. Parallel over (image, channel) planes, so no two tasks write the same pixel.
template <class T>
void col2im(Exec& ex, const ConvGeom& G, const T* col, int64_t n0, int64_t g, T* dx) {
  const int64_t PQ = G.pq(), HW = G.hw(), ld = g * PQ, R = G.R, S = G.S, P = G.P, Q = G.Q, W = G.W;
  parallel(ex, g * G.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(R * S * PQ, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / G.C, ci = t % G.C;
      T* xp = dx + ((n0 + img) * G.C + ci) * HW;
      std::fill_n(xp, HW, T(0));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) {
          const T* src = col + ((ci * R + r) * S + s) * ld + img * PQ;
          int64_t q0, q1, p0, p1;
          valid_range(W, Q, G.sw, G.pw, s, q0, q1);
          valid_range(G.H, P, G.sh, G.ph, r, p0, p1);
          for (int64_t p = p0; p < p1; ++p) {
            T* d = xp + (p * G.sh - G.ph + r) * W;
            const T* c = src + p * Q;
            if (G.sw == 1) {
              add_run(d + (q0 - G.pw + s), c + q0, q1 - q0);
            } else {
              for (int64_t q = q0; q < q1; ++q) d[q * G.sw - G.pw + s] += c[q];
            }
          }
        }
    }
  });
}

}  // namespace braid::cpu::kern
