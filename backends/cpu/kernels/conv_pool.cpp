// CONV2D (im2col + gemm) and POOL2D (max / average).
//
// Conv parallelism: images are grouped so that their im2col columns sit side by side in one
// [C*R*S, g*P*Q] matrix of about one core's L2 (im2col.h: plan_groups), and ONE gemm per group computes
// [K, g*P*Q]. Why not one gemm per image: on the small images CNNs of this size use (LeNet's second
// layer: P*Q=81) a per-image gemm is far too small to run at gemm speed, while a wide N dimension keeps
// OpenBLAS's kernels at peak. Groups run in parallel, one core each (im2col, gemm and scatter of a group
// on the core whose cache holds its columns); with fewer groups than cores each group is split over
// all of them instead. The price is one scatter pass of the output (adding the bias on the way).
// 1x1 stride-1 unpadded convolutions skip im2col: the image already is the column matrix. Stride-1
// convolutions with few output channels use a direct kernel instead (see conv_direct_image).
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <limits>
#include <optional>

#include "blas.h"
#include "conv_lanes.h"
#include "conv_onednn.h"
#include "im2col.h"

namespace braid::cpu::kern {
namespace {

// ---- direct convolution (stride 1, few output channels) -------------------------------------------

// Output columns kept in registers: four 32-byte vectors (AVX2 registers in the x86-64-v3 clone; pairs
// of SSE registers in the baseline). 16-byte vectors ran LeNet's first conv at half the speed.
template <class T>
constexpr int64_t kQBlock = 128 / sizeof(T);
constexpr int64_t kDirectMaxK = 8;          // gemm's M dimension below this wastes its kernels
constexpr int64_t kDirectMaxPad = 1 << 18;  // padded image elements per task (stack of the chunk)
// With few taps per output (LeNet's first layer: C*R*S = 9) im2col copies the image R*S times and the
// gemm has almost no inner dimension to amortise it over: the direct kernel wins at any K.
constexpr int64_t kDirectMaxTaps = 32;

// With K = 6 (LeNet's first layer) gemm's M dimension is too small for its micro-kernel and packing
// the R*S-times-larger column matrix dominates. Here each output row block of kQBlock columns lives
// in registers while all C*R*S taps accumulate into it from a zero-padded copy of the image, so the
// only memory traffic is the image itself. Padded rows are wide enough for whole blocks (the extra
// columns are computed and dropped).
template <class T>
BRAID_HOT void conv_direct_image(const T* __restrict x, const T* __restrict w, const T* bias, T* __restrict y,
                                 T* __restrict xpad, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                                 int64_t P, int64_t Q, int64_t ph, int64_t pw, int64_t Hp, int64_t Wq) {
  std::fill_n(xpad, C * Hp * Wq, T(0));
  for (int64_t ci = 0; ci < C; ++ci)
    for (int64_t h = 0; h < H; ++h) std::copy_n(x + (ci * H + h) * W, W, xpad + (ci * Hp + h + ph) * Wq + pw);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q0 = 0; q0 < Q; q0 += kQBlock<T>) {
        // kQBlock accumulators as GCC/Clang vectors held in registers across all taps. Left
        // to itself the auto-vectoriser vectorises the tap loop instead and spills the accumulators
        // (and a single wide generic vector is kept in memory by GCC).
        typedef T V __attribute__((vector_size(32)));
        constexpr int64_t L = 32 / sizeof(T), NV = kQBlock<T> / L;
        V acc[NV];
        for (auto& a : acc) a = V{} + (bias ? bias[k] : T(0));
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t r = 0; r < R; ++r) {
            const T* xr = xpad + (ci * Hp + p + r) * Wq + q0;
            const T* wr = w + ((k * C + ci) * R + r) * S;
            for (int64_t s = 0; s < S; ++s) {
              const T wv = wr[s];
              for (int64_t v = 0; v < NV; ++v) {
                V xv;
                std::memcpy(&xv, xr + s + v * L, sizeof(V));
                acc[v] += wv * xv;
              }
            }
          }
        T out[kQBlock<T>];
        std::memcpy(out, acc, sizeof(acc));
        std::copy_n(out, std::min(kQBlock<T>, Q - q0), y + (k * P + p) * Q + q0);
      }
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
  const ConvGeom geom{N, C, H, W, K, R, S, P, Q, sh, sw, ph, pw};
  std::optional<onednn::Choice> choice;  // float32: oneDNN or the kernels below (conv_onednn.h)
  if constexpr (std::is_same_v<T, float>)
    if (onednn::run_if_chosen(choice, onednn::Pass::forward, geom, bias != nullptr, ex.concurrency(),
                              [&] { return onednn::conv_forward(ex, geom, x, w, bias, y); })) {
      Y.finish(ex);
      return;
    }

  const int64_t Hp = H + 2 * ph, Wq = std::max(W + 2 * pw, (Q + kQBlock<T> - 1) / kQBlock<T> * kQBlock<T> + S - 1);
  const bool direct = sh == 1 && sw == 1 && (K <= kDirectMaxK || CRS <= kDirectMaxTaps) && C * Hp * Wq <= kDirectMaxPad;
  if constexpr (std::is_same_v<T, float>)
    if (!direct && lanes::forward_fits(geom, ex.concurrency())) {
      lanes::conv_forward(ex, geom, x, w, bias, y);
      Y.finish(ex);
      return;
    }
  if (direct) {
    parallel(ex, N, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, K * PQ * CRS / 8)), [&](int64_t b, int64_t e) {
      std::vector<T> xpad(static_cast<size_t>(C * Hp * Wq));  // per chunk: small, on this worker
      for (int64_t n = b; n < e; ++n)
        conv_direct_image(x + n * C * HW, w, bias, y + n * K * PQ, xpad.data(), C, H, W, K, R, S, P, Q, ph, pw, Hp, Wq);
    });
    Y.finish(ex);
    return;
  }

  // y[n][k][:] = bias[k], so gemm can accumulate onto it (beta = 1).
  auto init_bias = [&](int64_t n) {
    for (int64_t k = 0; k < K; ++k) std::fill_n(y + (n * K + k) * PQ, PQ, bias[k]);
  };
  const T beta = bias ? T(1) : T(0);

  if (R == 1 && S == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0) {
    auto one = [&](Exec& on, int64_t n) {
      if (bias) init_bias(n);
      parallel_gemm(on, false, false, K, PQ, C, w, C, x + n * C * HW, HW, beta, y + n * K * PQ, PQ);
    };
    if (double(K) * double(PQ) * double(C) < kSmallGemm)
      parallel(ex, N, 1, [&](int64_t b, int64_t e) {
        SerialExec serial;
        for (int64_t n = b; n < e; ++n) one(serial, n);
      });
    else
      for (int64_t n = 0; n < N; ++n) one(ex, n);
    Y.finish(ex);
    return;
  }

  const GroupPlan plan = plan_groups(ex, geom);
  const int64_t col_size = CRS * plan.size * PQ, tmp_size = plan.size > 1 ? K * plan.size * PQ : 0;
  const Scratch<T> col_buf(0, size_t(plan.parts * col_size)), tmp_buf(1, size_t(plan.parts * tmp_size));
  for_each_group(ex, geom, plan, [&](Exec& on, const ImageGroup& grp) {
    const int64_t n0 = grp.n0, g = grp.g, ld = g * PQ;
    T* const col = col_buf.get() + grp.part * col_size;
    T* const tmp = tmp_buf.get() + grp.part * tmp_size;
    im2col(on, geom, x, n0, g, col);
    if (g == 1) {
      if (bias) init_bias(n0);
      parallel_gemm(on, false, false, K, PQ, CRS, w, CRS, col, ld, beta, y + n0 * K * PQ, PQ);
      return;
    }
    parallel_gemm(on, false, false, K, ld, CRS, w, CRS, col, ld, T(0), tmp, ld);
    // Scatter [K, g, PQ] to [g, K, PQ], adding the bias.
    parallel(on, g * K, std::max<int64_t>(1, kGrain / std::max<int64_t>(PQ, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t img = t / K, k = t % K;
        const T* src = tmp + k * ld + img * PQ;
        T* dst = y + ((n0 + img) * K + k) * PQ;
        const T add = bias ? bias[k] : T(0);
        for (int64_t i = 0; i < PQ; ++i) dst[i] = src[i] + add;
      }
    });
  });
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
  // braid.h: stride 0 means the kernel size (the host normally resolves it; kept for robustness).
  const int64_t sh = c.i[3] > 0 ? c.i[3] : std::max<int64_t>(1, kh),
                sw = c.i[4] > 0 ? c.i[4] : std::max<int64_t>(1, kw);
  const int64_t ph = c.i[5], pw = c.i[6];
  const int64_t H = vx.shape[2], W = vx.shape[3], P = vy.shape[2], Q = vy.shape[3];
  const int64_t planes = vx.shape[0] * vx.shape[1];
  const DenseIn<T> X(ex, vx);
  DenseOut<T> Y(vy);
  const T* x = X.get();
  T* y = Y.get();
  const bool two_by_two = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0;
  auto mx = [](T a, T b) { return (b > a || b != b) ? b : a; };  // NaN-propagating
  parallel(ex, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, H * W)), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* xp = x + pl * H * W;
      T* yp = y + pl * P * Q;
      if (two_by_two) {  // the common case: no clipping, a branch-free loop the compiler vectorises
        for (int64_t p = 0; p < P; ++p) {
          const T* r0 = xp + 2 * p * W;
          const T* r1 = r0 + W;
          T* o = yp + p * Q;
          if (is_max) {
            // Vertical then horizontal: each pass is one select GCC vectorises; the nested form is not.
            constexpr int64_t kCols = 512;
            T v[2 * kCols];
            for (int64_t q0 = 0; q0 < Q; q0 += kCols) {
              const int64_t n = std::min(kCols, Q - q0);
              for (int64_t j = 0; j < 2 * n; ++j) v[j] = mx(r0[2 * q0 + j], r1[2 * q0 + j]);
              for (int64_t q = 0; q < n; ++q) o[q0 + q] = mx(v[2 * q], v[2 * q + 1]);
            }
          } else
            for (int64_t q = 0; q < Q; ++q)
              o[q] = ((r0[2 * q] + r0[2 * q + 1]) + (r1[2 * q] + r1[2 * q + 1])) * T(0.25);
        }
        continue;
      }
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
