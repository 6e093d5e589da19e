// CONV2D (im2col + gemm) and POOL2D (max / average).
//
// Conv parallelism: images are grouped so that their im2col columns sit side by side in one
// [C*R*S, g*P*Q] matrix (bounded scratch), im2col fills it in parallel over the arena, and ONE gemm
// per group, threaded by OpenBLAS, computes [K, g*P*Q]. Why not one single-threaded gemm per image
// spread over the batch: on the small images CNNs of this size use (LeNet: K=6, P*Q=784) a per-image
// gemm is far too small to run at gemm speed, while a wide N dimension keeps OpenBLAS's kernels at
// peak and splits evenly across cores; it also needs no per-call control of OpenBLAS's thread count.
// The price is one scatter pass of the output (adding the bias on the way), cheap next to im2col.
// 1x1 stride-1 unpadded convolutions skip im2col: the image already is the column matrix.
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <limits>
#include <optional>

#include "blas.h"

namespace braid::cpu::kern {
namespace {

constexpr int64_t kColBudget = int64_t{1} << 21;  // im2col scratch elements per group (8 MiB of float)

// Output indices q in [q0, q1) read input columns q*stride - pad + offset inside [0, size).
inline void valid_range(int64_t size, int64_t out, int64_t stride, int64_t pad, int64_t offset, int64_t& q0, int64_t& q1) {
  const int64_t lo = pad - offset;             // need q*stride >= lo
  const int64_t hi = size - 1 + pad - offset;  // need q*stride <= hi
  q0 = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  q1 = hi < 0 ? 0 : std::min(out, hi / stride + 1);
  q0 = std::min(q0, out);
  q1 = std::max(q1, q0);
}

template <class T>
void conv_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[0];
  const auto& vw = c.inputs[1];
  const auto& vy = c.outputs[0];
  const int64_t N = vx.shape[0], C = vx.shape[1], H = vx.shape[2], W = vx.shape[3];
  const int64_t K = vw.shape[0], R = vw.shape[2], S = vw.shape[3];
  const int64_t P = vy.shape[2], Q = vy.shape[3];
  const int64_t sh = std::max<int64_t>(1, c.i[0]), sw = std::max<int64_t>(1, c.i[1]), ph = c.i[2], pw = c.i[3];
  if (N == 0 || K == 0 || P == 0 || Q == 0) return;
  const DenseIn<T> X(ex, vx), Wt(ex, vw);
  std::optional<DenseIn<T>> Bias;
  if (c.num_inputs >= 3) Bias.emplace(ex, c.inputs[2]);
  const T* bias = Bias ? Bias->get() : nullptr;
  DenseOut<T> Y(vy);
  const T* x = X.get();
  const T* w = Wt.get();
  T* y = Y.get();
  const int64_t CRS = C * R * S, PQ = P * Q, HW = H * W;

  // y[n][k][:] = bias[k], so gemm can accumulate onto it (beta = 1).
  auto init_bias = [&](int64_t n) {
    for (int64_t k = 0; k < K; ++k) std::fill_n(y + (n * K + k) * PQ, PQ, bias[k]);
  };
  const T beta = bias ? T(1) : T(0);

  if (R == 1 && S == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0) {
    auto one = [&](int64_t n) {
      if (bias) init_bias(n);
      gemm(false, false, K, PQ, C, w, C, x + n * C * HW, HW, beta, y + n * K * PQ, PQ);
    };
    if (double(K) * double(PQ) * double(C) < kSmallGemm)
      parallel(ex, N, 1, [&](int64_t b, int64_t e) { for (int64_t n = b; n < e; ++n) one(n); });
    else
      for (int64_t n = 0; n < N; ++n) one(n);
    Y.finish(ex);
    return;
  }

  const int64_t G = std::clamp<int64_t>(kColBudget / std::max<int64_t>(1, CRS * PQ), 1, N);
  std::vector<T> col(static_cast<size_t>(CRS * G * PQ));
  std::vector<T> tmp(G > 1 ? size_t(K * G * PQ) : 0);
  for (int64_t n0 = 0; n0 < N; n0 += G) {
    const int64_t g = std::min(G, N - n0), ld = g * PQ;
    // im2col: row (ci, r, s) of image i holds x[ci][p*sh - ph + r][q*sw - pw + s], zero outside.
    parallel(ex, CRS * g, std::max<int64_t>(1, kGrain / std::max<int64_t>(PQ, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t row = t / g, img = t % g;
        const int64_t ci = row / (R * S), r = (row / S) % R, s = row % S;
        const T* xp = x + ((n0 + img) * C + ci) * HW;
        T* dst = col.data() + row * ld + img * PQ;
        int64_t q0, q1, p0, p1;
        valid_range(W, Q, sw, pw, s, q0, q1);
        valid_range(H, P, sh, ph, r, p0, p1);
        std::fill_n(dst, p0 * Q, T(0));
        for (int64_t p = p0; p < p1; ++p) {
          T* d = dst + p * Q;
          const T* src = xp + (p * sh - ph + r) * W;  // input row; column of q is q*sw - pw + s
          std::fill_n(d, q0, T(0));
          if (sw == 1)
            std::copy(src + (q0 - pw + s), src + (q1 - pw + s), d + q0);
          else
            for (int64_t q = q0; q < q1; ++q) d[q] = src[q * sw - pw + s];
          std::fill(d + q1, d + Q, T(0));
        }
        std::fill(dst + p1 * Q, dst + PQ, T(0));
      }
    });
    if (g == 1) {
      if (bias) init_bias(n0);
      gemm(false, false, K, PQ, CRS, w, CRS, col.data(), ld, beta, y + n0 * K * PQ, PQ);
      continue;
    }
    gemm(false, false, K, ld, CRS, w, CRS, col.data(), ld, T(0), tmp.data(), ld);
    // Scatter [K, g, PQ] to [g, K, PQ], adding the bias.
    parallel(ex, g * K, std::max<int64_t>(1, kGrain / std::max<int64_t>(PQ, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t img = t / K, k = t % K;
        const T* src = tmp.data() + k * ld + img * PQ;
        T* dst = y + ((n0 + img) * K + k) * PQ;
        const T add = bias ? bias[k] : T(0);
        for (int64_t i = 0; i < PQ; ++i) dst[i] = src[i] + add;
      }
    });
  }
  Y.finish(ex);
}

// Max ignores padded cells (and propagates NaN); average divides by the in-bounds cells only.
// A window with no in-bounds cell gives -inf (max) or 0 (average).
template <class T>
void pool_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[0];
  const auto& vy = c.outputs[0];
  const bool is_max = c.i[0] == BRAID_POOL_MAX;
  const int64_t kh = c.i[1], kw = c.i[2];
  const int64_t sh = std::max<int64_t>(1, c.i[3]), sw = std::max<int64_t>(1, c.i[4]), ph = c.i[5], pw = c.i[6];
  const int64_t H = vx.shape[2], W = vx.shape[3], P = vy.shape[2], Q = vy.shape[3];
  const int64_t planes = vx.shape[0] * vx.shape[1];
  const DenseIn<T> X(ex, vx);
  DenseOut<T> Y(vy);
  const T* x = X.get();
  T* y = Y.get();
  parallel(ex, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, H * W)), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* xp = x + pl * H * W;
      T* yp = y + pl * P * Q;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t h0 = p * sh - ph, hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, H);
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t w0 = q * sw - pw, ws = std::max<int64_t>(w0, 0), we = std::min(w0 + kw, W);
          if (is_max) {
            T m = -std::numeric_limits<T>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t i = ws; i < we; ++i) {
                const T v = xp[h * W + i];
                m = (v > m || v != v) ? v : m;
              }
            yp[p * Q + q] = m;
          } else {
            T s = 0;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t i = ws; i < we; ++i) s += xp[h * W + i];
            const int64_t cnt = std::max<int64_t>(0, he - hs) * std::max<int64_t>(0, we - ws);
            yp[p * Q + q] = cnt > 0 ? s / T(cnt) : T(0);
          }
        }
      }
    }
  });
  Y.finish(ex);
}

}  // namespace

KernelResult k_conv2d(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { conv_typed<T>(ex, c); });
  return {};
}

KernelResult k_pool2d(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { pool_typed<T>(ex, c); });
  return {};
}

}  // namespace braid::cpu::kern
