// Backward kernels (ABI 1.1): CONV2D_BWD_DATA, CONV2D_BWD_WEIGHT (im2col/col2im + one gemm per group of
// images, the groups spread over the cores as in the forward conv), POOL2D_BWD, BATCH_NORM_BWD,
// SOFTMAX_CE_BWD. Every kernel overwrites its outputs. Autograd (runtime/autograd) composes all other
// gradients from forward ops.
#include "common.h"
// (common.h first: see the note at its top)
#include <array>
#include <cmath>
#include <cstring>
#include <optional>

#include "blas.h"
#include "conv_lanes.h"
#include "conv_onednn.h"
#include "fold.h"
#include "im2col.h"
#include "vmath.h"

namespace braid::cpu::kern {
namespace {

template <class T>
inline T& at(const braid_buffer_view& v, int64_t i) {
  return data_of<T>(v)[i * v.strides[0]];
}

ConvGeom conv_geom(const Call& c, const braid_buffer_view& x, const braid_buffer_view& w, const braid_buffer_view& y) {
  return ConvGeom{x.shape[0],
                  x.shape[1],
                  x.shape[2],
                  x.shape[3],
                  w.shape[0],
                  w.shape[2],
                  w.shape[3],
                  y.shape[2],
                  y.shape[3],
                  std::max<int64_t>(1, c.i[0]),
                  std::max<int64_t>(1, c.i[1]),
                  c.i[2],
                  c.i[3]};
}

// dyg [K, g*PQ] = dy of images n0 .. n0+g-1 ([g, K, PQ]) with the image axis moved inside.
template <class T>
void gather_dy(Exec& ex, const ConvGeom& G, const T* dy, int64_t n0, int64_t g, T* dyg) {
  const int64_t PQ = G.pq(), ld = g * PQ;
  parallel(ex, g * G.K, std::max<int64_t>(1, kGrain / std::max<int64_t>(PQ, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / G.K, k = t % G.K;
      copy_run(dyg + k * ld + img * PQ, dy + ((n0 + img) * G.K + k) * PQ, PQ);
    }
  });
}

// dx = col2im(W^T dy), a group of images at a time.
template <class T>
void conv_bwd_data_typed(Exec& ex, const Call& c) {
  // in[0] dy NKPQ, in[1] w KCRS, out[0] dx NCHW
  const ConvGeom G = conv_geom(c, c.outputs[0], c.inputs[1], c.inputs[0]);
  const DenseIn<T> DY(ex, c.inputs[0]), Wt(ex, c.inputs[1]);
  DenseOut<T> DX(c.outputs[0]);
  T* dx = DX.get();
  if (G.N == 0 || G.C == 0 || G.H * G.W == 0) return;
  if (G.K == 0 || G.pq() == 0) {
    std::fill_n(dx, G.N * G.C * G.hw(), T(0));
    DX.finish(ex);
    return;
  }
  std::optional<onednn::Choice> choice;  // float32: oneDNN or the kernels below (conv_onednn.h)
  if constexpr (std::is_same_v<T, float>)
    if (onednn::run_if_chosen(choice, onednn::Pass::backward_data, G, false, ex.concurrency(),
                              [&] { return onednn::conv_backward_data(ex, G, DY.get(), Wt.get(), dx); })) {
      DX.finish(ex);
      return;
    }

  const GroupPlan plan = plan_groups(ex, G);
  const int64_t GS = plan.size, CRS = G.crs(), PQ = G.pq();
  // The vector col2im reads up to kCol2imMargin elements around a column matrix: each run's matrix
  // has zeroed margins on both sides.
  const bool vec = col2im_vector_path(G);
  const int64_t margin = vec ? kCol2imMargin : 0;
  const int64_t col_size = CRS * GS * PQ + 2 * margin, dyg_size = GS > 1 ? G.K * GS * PQ : 0;
  const Scratch<T> col_buf(0, size_t(plan.parts * col_size)), dyg_buf(1, size_t(plan.parts * dyg_size));
  for_each_group(ex, G, plan, [&](Exec& on, const ImageGroup& grp) {
    const int64_t n0 = grp.n0, g = grp.g, ld = g * PQ;
    T* const col = col_buf.get() + grp.part * col_size + margin;
    if (vec && grp.first) std::fill_n(col - margin, margin, T(0));
    const T* dyg = DY.get() + n0 * G.K * PQ;
    if (g > 1) {
      T* const gathered = dyg_buf.get() + grp.part * dyg_size;
      gather_dy(on, G, DY.get(), n0, g, gathered);
      dyg = gathered;
    }
    parallel_gemm(on, true, false, CRS, ld, G.K, Wt.get(), CRS, dyg, ld, T(0), col, ld);
    if (vec) {
      std::fill_n(col + CRS * ld, margin, T(0));  // after this group's matrix (a last group is narrower)
      col2im_s1(on, G, col, n0, g, dx);
    } else {
      col2im(on, G, col, n0, g, dx);
    }
  });
  DX.finish(ex);
}

// Few taps per output channel (LeNet's first layer: C*R*S = 9): im2col would copy the image R*S times
// and gather dy for a gemm whose output is tiny, so each tap's gradient is summed directly as dot
// products of dy rows with shifted image rows. Chunks of images accumulate privately, then add up in
// a fixed order (deterministic).
constexpr int64_t kDirectMaxTaps = 32;  // weight_grad_image_s1 keeps one offset per tap on the stack

// sum of a[i] * b[i]: explicit vectors (the compiler may not reorder a float sum by itself).
template <class T>
inline T dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  typedef T V __attribute__((vector_size(16)));
  constexpr int64_t L = 16 / sizeof(T);
  V acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    V a0, a1, b0, b1;
    std::memcpy(&a0, a + i, sizeof(V));
    std::memcpy(&a1, a + i + L, sizeof(V));
    std::memcpy(&b0, b + i, sizeof(V));
    std::memcpy(&b1, b + i + L, sizeof(V));
    acc0 += a0 * b0;
    acc1 += a1 * b1;
  }
  acc0 += acc1;
  T s = 0;
  for (int64_t l = 0; l < L; ++l) s += acc0[l];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Adds image n's contribution to acc [K, C, R, S] (double).
template <class T>
BRAID_HOT void weight_grad_image(const ConvGeom& G, const T* dy, const T* x, int64_t n, double* acc) {
  const int64_t PQ = G.pq(), HW = G.hw();
  for (int64_t k = 0; k < G.K; ++k)
    for (int64_t ci = 0; ci < G.C; ++ci)
      for (int64_t r = 0; r < G.R; ++r)
        for (int64_t s = 0; s < G.S; ++s) {
          int64_t q0, q1, p0, p1;
          valid_range(G.W, G.Q, G.sw, G.pw, s, q0, q1);
          valid_range(G.H, G.P, G.sh, G.ph, r, p0, p1);
          T sum = 0;
          for (int64_t p = p0; p < p1; ++p) {
            const T* g = dy + (n * G.K + k) * PQ + p * G.Q;
            const T* xr = x + (n * G.C + ci) * HW + (p * G.sh - G.ph + r) * G.W - G.pw + s;
            if (G.sw == 1)
              sum += dot(g + q0, xr + q0, q1 - q0);
            else
              for (int64_t q = q0; q < q1; ++q) sum += g[q] * xr[q * G.sw];
          }
          acc[((k * G.C + ci) * G.R + r) * G.S + s] += double(sum);
        }
}

// Stride 1: the image and each dy row are copied zero-padded, rows rounded up to whole vectors, so a tap's
// gradient is a sum of whole-vector products (a dy vector times the image row shifted by the tap) with
// no bounds per row. NT taps accumulate in registers while each dy vector is loaded once. LeNet's first
// layer ran about 2x faster than with weight_grad_image's per-row dot products (26-wide rows): 5.3 ->
// 2.5 ms per batch of 256 on one core.
struct PaddedGeom {
  int64_t Hp, Wq, Qv;  // padded image rows and row width, dy row width (whole vectors)
};

template <int NT, class T>
BRAID_HOT void tap_block_grad(const T* __restrict xpad, const T* __restrict gpad, const int64_t* off, int64_t P,
                              const PaddedGeom& pg, double* acc) {
  typedef T V __attribute__((vector_size(32)));
  constexpr int64_t L = 32 / sizeof(T);
  V a[NT];
  for (auto& v : a) v = V{};
  for (int64_t p = 0; p < P; ++p)
    for (int64_t v = 0; v < pg.Qv; v += L) {
      V g;
      std::memcpy(&g, gpad + p * pg.Qv + v, sizeof(V));
      const T* xr = xpad + p * pg.Wq + v;
      for (int j = 0; j < NT; ++j) {
        V xv;
        std::memcpy(&xv, xr + off[j], sizeof(V));
        a[j] += g * xv;
      }
    }
  for (int j = 0; j < NT; ++j) {
    double sum = 0;
    for (int64_t l = 0; l < L; ++l) sum += double(a[j][l]);
    acc[j] += sum;
  }
}

// Taps per block: 12 accumulators + a dy vector + an image vector fit AVX2's 16 registers. Every block
// size has its own instantiation, so a layer's taps split into whole blocks with no one-tap remainder
// pass (LeNet's 9 taps are one block).
constexpr int64_t kTapBlock = 12;
template <class T>
using TapBlockFn = void (*)(const T*, const T*, const int64_t*, int64_t, const PaddedGeom&, double*);
template <class T>
constexpr auto kTapBlocks = []<size_t... I>(std::index_sequence<I...>) {
  return std::array<TapBlockFn<T>, sizeof...(I)>{&tap_block_grad<int(I) + 1, T>...};
}
(std::make_index_sequence<kTapBlock>{});

// Adds image n's contribution to acc [K, C, R, S]; false (nothing added) when the image holds an inf
// or NaN: the padded columns multiply image values by zero, which must stay zero.
template <class T>
bool weight_grad_image_s1(const ConvGeom& G, const PaddedGeom& pg, const T* dy, const T* x, int64_t n, double* acc,
                          T* xpad, T* gpad) {
  const int64_t CRS = G.crs(), HW = G.hw();
  const T* xn = x + n * G.C * HW;
  bool finite = true;
  for (int64_t i = 0; i < G.C * HW; ++i) finite &= std::isfinite(xn[i]);
  if (!finite) return false;
  std::fill_n(xpad, G.C * pg.Hp * pg.Wq, T(0));
  for (int64_t ci = 0; ci < G.C; ++ci)
    for (int64_t h = 0; h < G.H; ++h)
      copy_run(xpad + (ci * pg.Hp + h + G.ph) * pg.Wq + G.pw, xn + (ci * G.H + h) * G.W, G.W);
  int64_t off[32];
  for (int64_t t = 0; t < CRS; ++t) {
    const int64_t ci = t / (G.R * G.S), r = (t / G.S) % G.R, s = t % G.S;
    off[t] = (ci * pg.Hp + r) * pg.Wq + s;
  }
  std::fill_n(gpad, G.P * pg.Qv, T(0));
  for (int64_t k = 0; k < G.K; ++k) {
    for (int64_t p = 0; p < G.P; ++p) copy_run(gpad + p * pg.Qv, dy + ((n * G.K + k) * G.P + p) * G.Q, G.Q);
    double* a = acc + k * CRS;
    for (int64_t t = 0; t < CRS; t += kTapBlock) {
      const int64_t nt = std::min(kTapBlock, CRS - t);
      kTapBlocks<T>[nt - 1](xpad, gpad, off + t, G.P, pg, a + t);
    }
  }
  return true;
}

template <class T>
void conv_bwd_weight_direct(Exec& ex, const ConvGeom& G, const T* dy, const T* x, T* dw) {
  const int64_t KCRS = G.K * G.crs();
  const int64_t chunks = std::min<int64_t>(G.N, 64), per = (G.N + chunks - 1) / chunks;
  std::vector<double> part(size_t(chunks * KCRS), 0.0);
  constexpr int64_t L = 32 / sizeof(T);
  const int64_t Qv = (G.Q + L - 1) / L * L;
  const PaddedGeom pg{G.H + 2 * G.ph, std::max(G.W + 2 * G.pw, Qv + G.S - 1), Qv};
  const bool s1 = G.sh == 1 && G.sw == 1;
  parallel(ex, chunks, 1, [&](int64_t b, int64_t e) {
    std::vector<T> xpad(s1 ? size_t(G.C * pg.Hp * pg.Wq) : 0), gpad(s1 ? size_t(G.P * pg.Qv) : 0);
    for (int64_t ch = b; ch < e; ++ch)
      for (int64_t n = ch * per; n < std::min(G.N, (ch + 1) * per); ++n)
        if (!s1 || !weight_grad_image_s1(G, pg, dy, x, n, part.data() + ch * KCRS, xpad.data(), gpad.data()))
          weight_grad_image(G, dy, x, n, part.data() + ch * KCRS);
  });
  for (int64_t i = 0; i < KCRS; ++i) {
    double t = 0;
    for (int64_t ch = 0; ch < chunks; ++ch) t += part[size_t(ch * KCRS + i)];
    dw[i] = T(t);
  }
}

// dw = sum over groups of dy_g [K, g*PQ] @ im2col(x_g)^T.
template <class T>
void conv_bwd_weight_typed(Exec& ex, const Call& c) {
  // in[0] dy NKPQ, in[1] x NCHW, out[0] dw KCRS
  const ConvGeom G = conv_geom(c, c.inputs[1], c.outputs[0], c.inputs[0]);
  const DenseIn<T> DY(ex, c.inputs[0]), X(ex, c.inputs[1]);
  DenseOut<T> DW(c.outputs[0]);
  T* dw = DW.get();
  const int64_t CRS = G.crs(), PQ = G.pq();
  if (G.K * CRS == 0) return;
  if (G.N == 0 || PQ == 0) {
    std::fill_n(dw, G.K * CRS, T(0));
    DW.finish(ex);
    return;
  }
  std::optional<onednn::Choice> choice;  // float32: oneDNN or the kernels below (conv_onednn.h)
  if constexpr (std::is_same_v<T, float>)
    if (onednn::run_if_chosen(choice, onednn::Pass::backward_weight, G, false, ex.concurrency(),
                              [&] { return onednn::conv_backward_weight(ex, G, DY.get(), X.get(), dw); })) {
      DW.finish(ex);
      return;
    }

  if (CRS <= kDirectMaxTaps) {
    conv_bwd_weight_direct(ex, G, DY.get(), X.get(), dw);
    DW.finish(ex);
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    if (lanes::backward_weight_fits(G, ex.concurrency())) {
      lanes::conv_backward_weight(ex, G, DY.get(), X.get(), dw);
      DW.finish(ex);
      return;
    }
  // Each run of groups sums its gemms into its own [K, CRS] (run 0 straight into dw); the runs then
  // add up in a fixed order, so the result repeats run to run.
  const GroupPlan plan = plan_groups(ex, G);
  const int64_t GS = plan.size, KCRS = G.K * CRS;
  const int64_t col_size = CRS * GS * PQ, dyg_size = GS > 1 ? G.K * GS * PQ : 0;
  const Scratch<T> col_buf(0, size_t(plan.parts * col_size)), dyg_buf(1, size_t(plan.parts * dyg_size));
  std::vector<T> partial(size_t((plan.parts - 1) * KCRS));
  for_each_group(ex, G, plan, [&](Exec& on, const ImageGroup& grp) {
    const int64_t n0 = grp.n0, g = grp.g, ld = g * PQ;
    T* const col = col_buf.get() + grp.part * col_size;
    const T* dyg = DY.get() + n0 * G.K * PQ;
    if (g > 1) {
      T* const gathered = dyg_buf.get() + grp.part * dyg_size;
      gather_dy(on, G, DY.get(), n0, g, gathered);
      dyg = gathered;
    }
    im2col(on, G, X.get(), n0, g, col);
    T* const acc = grp.part == 0 ? dw : partial.data() + (grp.part - 1) * KCRS;
    parallel_gemm(on, false, true, G.K, CRS, ld, dyg, ld, col, ld, grp.first ? T(0) : T(1), acc, CRS);
  });
  if (plan.parts > 1)
    parallel(ex, KCRS, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t part = 1; part < plan.parts; ++part) {
        const T* src = partial.data() + (part - 1) * KCRS;
        for (int64_t i = b; i < e; ++i) dw[i] += src[i];
      }
    });
  DW.finish(ex);
}

// Max: each window's gradient goes to its first maximum; avg: spread over the in-bounds cells.
template <class T>
void pool_bwd_typed(Exec& ex, const Call& c) {
  const auto& vdy = c.inputs[0];
  const auto& vx = c.inputs[1];
  const bool is_max = c.i[0] == BRAID_POOL_MAX;
  const int64_t kh = c.i[1], kw = c.i[2];
  const int64_t sh = c.i[3] > 0 ? c.i[3] : std::max<int64_t>(1, kh),
                sw = c.i[4] > 0 ? c.i[4] : std::max<int64_t>(1, kw);
  const int64_t ph = c.i[5], pw = c.i[6];
  const int64_t H = vx.shape[2], W = vx.shape[3], P = vdy.shape[2], Q = vdy.shape[3];
  const int64_t planes = vx.shape[0] * vx.shape[1];
  const DenseIn<T> DY(ex, vdy);
  std::optional<DenseIn<T>> X;
  if (is_max) X.emplace(ex, vx);
  DenseOut<T> DX(c.outputs[0]);
  const T* dy = DY.get();
  T* dx = DX.get();
  const bool two_by_two_avg = !is_max && kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0;
  parallel(ex, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, H * W)), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* g = dy + pl * P * Q;
      T* d = dx + pl * H * W;
      std::fill_n(d, H * W, T(0));
      if (two_by_two_avg) {
        for (int64_t p = 0; p < P; ++p) {
          T* r0 = d + 2 * p * W;
          T* r1 = r0 + W;
          const T* gp = g + p * Q;
          for (int64_t q = 0; q < Q; ++q) {
            const T v = gp[q] * T(0.25);
            r0[2 * q] = v, r0[2 * q + 1] = v, r1[2 * q] = v, r1[2 * q + 1] = v;
          }
        }
        continue;
      }
      const T* xp = is_max ? X->get() + pl * H * W : nullptr;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t h0 = p * sh - ph, hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, H);
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t w0 = q * sw - pw, ws = std::max<int64_t>(w0, 0), we = std::min(w0 + kw, W);
          if (hs >= he || ws >= we) continue;
          const T gv = g[p * Q + q];
          if (is_max) {
            // The same scan as the forward kernel: the first cell that beats the running maximum.
            int64_t arg = hs * W + ws;
            T m = xp[arg];
            for (int64_t h = hs; h < he; ++h)
              for (int64_t i = ws; i < we; ++i) {
                const T v = xp[h * W + i];
                if (v > m || (v != v && m == m)) m = v, arg = h * W + i;  // first max; NaN wins as forward
              }
            d[arg] += gv;
          } else {
            const T v = gv / T((he - hs) * (we - ws));
            for (int64_t h = hs; h < he; ++h)
              for (int64_t i = ws; i < we; ++i) d[h * W + i] += v;
          }
        }
      }
    }
  });
  DX.finish(ex);
}

// in: dy, x, gamma, save_mean, save_invstd; out: dx, dgamma, dbeta. With xhat = (x - mean) * invstd:
// dbeta = sum dy, dgamma = sum dy * xhat; training: dx = gamma * invstd * (dy - dbeta/M - xhat * dgamma/M),
// otherwise dx = gamma * invstd * dy. Sums in double, parallel over channels.
template <class T>
void batch_norm_bwd_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[1];
  const auto &gamma = c.inputs[2], &smean = c.inputs[3], &sinv = c.inputs[4];
  const int64_t N = vx.shape[0], C = vx.shape[1];
  int64_t L = 1;
  for (int d = 2; d < vx.ndim; ++d) L *= vx.shape[d];
  const bool training = c.i[0] != 0;
  const DenseIn<T> DY(ex, c.inputs[0]), X(ex, vx);
  DenseOut<T> DX(c.outputs[0]);
  const T *dy = DY.get(), *x = X.get();
  T* dx = DX.get();
  const double M = double(N * L);
  parallel(ex, C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, N * L)), [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) {
      const double mean = double(at<const T>(smean, ch)), inv = double(at<const T>(sinv, ch));
      double sdy = 0, sdyx = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* g = dy + (n * C + ch) * L;
        const T* xp = x + (n * C + ch) * L;
        for (int64_t i = 0; i < L; ++i) {
          sdy += double(g[i]);
          sdyx += double(g[i]) * (double(xp[i]) - mean);
        }
      }
      const double dgamma = sdyx * inv, dbeta = sdy;
      if (c.num_outputs >= 2) at<T>(c.outputs[1], ch) = T(dgamma);
      if (c.num_outputs >= 3) at<T>(c.outputs[2], ch) = T(dbeta);
      const double scale = double(at<const T>(gamma, ch)) * inv;
      const double mdy = training && M > 0 ? dbeta / M : 0.0, mdg = training && M > 0 ? dgamma / M : 0.0;
      for (int64_t n = 0; n < N; ++n) {
        const T* g = dy + (n * C + ch) * L;
        const T* xp = x + (n * C + ch) * L;
        T* o = dx + (n * C + ch) * L;
        for (int64_t i = 0; i < L; ++i) {
          const double xhat = (double(xp[i]) - mean) * inv;
          o[i] = T(scale * (double(g[i]) - mdy - xhat * mdg));
        }
      }
    }
  });
  DX.finish(ex);
}

// dlogits[n] = (softmax(logits[n]) - onehot(label[n])) * dloss[n].
template <class T, class Lb>
KernelResult softmax_ce_bwd_typed(Exec& ex, const Call& c) {
  const auto &vx = c.inputs[0], &vl = c.inputs[1], &vd = c.inputs[2];
  const int64_t N = vx.shape[0], K = vx.shape[1];
  for (int64_t n = 0; n < N; ++n) {
    const int64_t l = int64_t(at<const Lb>(vl, n));
    if (l < 0 || l >= K)
      return fail(BRAID_ERR_KERNEL, "softmax_cross_entropy backward: label " + std::to_string(l) +
                                        " out of range [0, " + std::to_string(K) + ") at row " + std::to_string(n));
  }
  const DenseIn<T> X(ex, vx);
  DenseOut<T> DX(c.outputs[0]);
  const T* x = X.get();
  T* dx = DX.get();
  parallel(ex, N, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* row = x + n * K;
      T* o = dx + n * K;
      const T m = fold_run<MaxR<T>>(row, K, 1);
      for (int64_t k = 0; k < K; ++k) o[k] = v_exp(row[k] - m);
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(o[k]);
      const T d = at<const T>(vd, n);
      const T f = T(double(d) / s);
      for (int64_t k = 0; k < K; ++k) o[k] *= f;
      o[int64_t(at<const Lb>(vl, n))] -= d;
    }
  });
  DX.finish(ex);
  return {};
}

}  // namespace

KernelResult k_conv2d_bwd_data(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { conv_bwd_data_typed<T>(ex, c); });
  return {};
}

KernelResult k_conv2d_bwd_weight(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { conv_bwd_weight_typed<T>(ex, c); });
  return {};
}

KernelResult k_pool2d_bwd(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { pool_bwd_typed<T>(ex, c); });
  return {};
}

KernelResult k_batch_norm_bwd(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { batch_norm_bwd_typed<T>(ex, c); });
  return {};
}

KernelResult k_softmax_ce_bwd(const Call& c, Exec& ex) {
  KernelResult r = unsupported(c.op, c.inputs[1].dtype, "labels must be int32 or int64");
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) {
    visit_dtype(IntTypes{}, c.inputs[1].dtype, [&]<class Lb>(Tag<Lb>) { r = softmax_ce_bwd_typed<T, Lb>(ex, c); });
  });
  return r;
}

}  // namespace braid::cpu::kern
