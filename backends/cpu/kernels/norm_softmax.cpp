// BATCH_NORM, SOFTMAX (and log-softmax), SOFTMAX_CE. Statistics accumulate in double; exponentials use
// the vectorised exp of vmath.h, written to a buffer first and summed by fold_run, because a loop
// that both exponentiates and accumulates into one float is a reduction the compiler will not vectorise.
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <optional>

#include "fold.h"
#include "vmath.h"

namespace braid::cpu::kern {
namespace {

// Element i of a 1-D view.
template <class T>
inline T& at(const braid_buffer_view& v, int64_t i) {
  return data_of<T>(v)[i * v.strides[0]];
}

// ---- batch norm ----------------------------------------------------------------------------------

// a = sum(x - sh), q = sum((x - sh)^2) over a dense run; four lanes break the add-latency chain.
template <class T>
void shifted_sums(const T* x, int64_t n, double sh, double& a, double& q) {
  double a4[4] = {}, q4[4] = {};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      const double d = double(x[i + k]) - sh;
      a4[k] += d;
      q4[k] += d * d;
    }
  for (; i < n; ++i) {
    const double d = double(x[i]) - sh;
    a4[0] += d;
    q4[0] += d * d;
  }
  a = (a4[0] + a4[1]) + (a4[2] + a4[3]);
  q = (q4[0] + q4[1]) + (q4[2] + q4[3]);
}

template <class T>
void batch_norm_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[0];
  const auto &gamma = c.inputs[1], &beta = c.inputs[2], &rmean = c.inputs[3], &rvar = c.inputs[4];
  const int64_t N = vx.shape[0], C = vx.shape[1];
  int64_t L = 1;  // spatial size: everything after the channel axis
  for (int d = 2; d < vx.ndim; ++d) L *= vx.shape[d];
  const double eps = c.f[0], momentum = c.f[1];
  const bool training = c.i[0] != 0;
  const DenseIn<T> X(ex, vx);
  DenseOut<T> Y(c.outputs[0]);
  const T* x = X.get();
  T* y = Y.get();
  if (C == 0) return;

  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  if (training) {
    const int64_t cnt = N * L;
    // Sums of (x - shift) and its square, shift = the channel's first value: removes the bulk of
    // the cancellation in E[x^2] - E[x]^2 when |mean| >> std. Row groups give fixed-order partials.
    const int64_t G = std::min<int64_t>(N, 32), per = (N + G - 1) / std::max<int64_t>(G, 1);
    std::vector<double> s1(static_cast<size_t>(G * C)), s2(static_cast<size_t>(G * C)), shift(static_cast<size_t>(C));
    for (int64_t ch = 0; ch < C; ++ch) shift[size_t(ch)] = cnt > 0 ? double(x[ch * L]) : 0.0;
    parallel(ex, G, 1, [&](int64_t b, int64_t e) {
      for (int64_t g = b; g < e; ++g)
        for (int64_t n = g * per; n < std::min(N, (g + 1) * per); ++n)
          for (int64_t ch = 0; ch < C; ++ch) {
            double a, q;
            shifted_sums(x + (n * C + ch) * L, L, shift[size_t(ch)], a, q);
            s1[size_t(g * C + ch)] += a;
            s2[size_t(g * C + ch)] += q;
          }
    });
    for (int64_t ch = 0; ch < C; ++ch) {
      double a = 0, q = 0;
      for (int64_t g = 0; g < G; ++g) {
        a += s1[size_t(g * C + ch)];
        q += s2[size_t(g * C + ch)];
      }
      const double m = cnt > 0 ? a / double(cnt) : 0.0;
      const double var = cnt > 0 ? std::max(0.0, q / double(cnt) - m * m) : 0.0;  // biased
      mean[size_t(ch)] = shift[size_t(ch)] + m;
      invstd[size_t(ch)] = 1.0 / std::sqrt(var + eps);
      // Running variance is unbiased; a single value per channel has none, so keep the biased one.
      const double unbiased = cnt > 1 ? var * double(cnt) / double(cnt - 1) : var;
      at<T>(rmean, ch) = T((1.0 - momentum) * double(at<T>(rmean, ch)) + momentum * mean[size_t(ch)]);
      at<T>(rvar, ch) = T((1.0 - momentum) * double(at<T>(rvar, ch)) + momentum * unbiased);
    }
  } else {
    for (int64_t ch = 0; ch < C; ++ch) {
      mean[size_t(ch)] = double(at<T>(rmean, ch));
      invstd[size_t(ch)] = 1.0 / std::sqrt(double(at<T>(rvar, ch)) + eps);
    }
  }
  if (c.num_outputs >= 2)
    for (int64_t ch = 0; ch < C; ++ch) at<T>(c.outputs[1], ch) = T(mean[size_t(ch)]);
  if (c.num_outputs >= 3)
    for (int64_t ch = 0; ch < C; ++ch) at<T>(c.outputs[2], ch) = T(invstd[size_t(ch)]);

  // y = (x - mean) * (gamma * invstd) + beta, plane by plane.
  parallel(ex, N * C, std::max<int64_t>(1, kGrain / std::max<int64_t>(L, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t ch = t % C;
      const T m = T(mean[size_t(ch)]);
      const T scale = T(double(at<T>(gamma, ch)) * invstd[size_t(ch)]);
      const T shift = at<T>(beta, ch);
      const T* p = x + t * L;
      T* o = y + t * L;
      for (int64_t i = 0; i < L; ++i) o[i] = (p[i] - m) * scale + shift;
    }
  });
  Y.finish(ex);
}

// ---- softmax -------------------------------------------------------------------------------------

constexpr int64_t kBuf = 1024;  // exp scratch per row block (stack)
constexpr int64_t kCols = 256;  // columns handled together when the axis is not innermost

// Sum of exp(x[i] - m) over a dense run, in double.
template <class T>
BRAID_HOT double sum_exp(const T* x, int64_t n, T m) {
  T buf[kBuf];
  double s = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kBuf) {
    const int64_t w = std::min(kBuf, n - i0);
    for (int64_t i = 0; i < w; ++i) buf[i] = v_exp(x[i0 + i] - m);
    s += fold_run<SumR<T>>(buf, w, 1);
  }
  return s;
}

template <class T>
BRAID_HOT void softmax_row(const T* x, T* y, int64_t K, bool log) {
  const T m = fold_run<MaxR<T>>(x, K, 1);
  if (log) {
    const T lse = T(std::log(sum_exp(x, K, m)));
    for (int64_t i = 0; i < K; ++i) y[i] = (x[i] - m) - lse;
  } else {
    for (int64_t i = 0; i < K; ++i) y[i] = v_exp(x[i] - m);
    const T inv = T(1.0 / fold_run<SumR<T>>(y, K, 1));
    for (int64_t i = 0; i < K; ++i) y[i] *= inv;
  }
}

// Softmax along the middle axis of [outer, K, inner] for columns [c0, c0 + w) of one outer index.
template <class T>
BRAID_HOT void softmax_cols(const T* x, T* y, int64_t K, int64_t inner, int64_t w, bool log) {
  T m[kCols];
  double s[kCols];
  std::copy_n(x, w, m);
  for (int64_t k = 1; k < K; ++k)
    for (int64_t j = 0; j < w; ++j) m[j] = MaxR<T>::add(m[j], x[k * inner + j]);
  std::fill_n(s, w, 0.0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < w; ++j) {
      const T e = v_exp(x[k * inner + j] - m[j]);
      if (!log) y[k * inner + j] = e;
      s[j] += double(e);
    }
  T f[kCols];
  for (int64_t j = 0; j < w; ++j) f[j] = log ? T(std::log(s[j])) : T(1.0 / s[j]);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < w; ++j) {
      T& o = y[k * inner + j];
      o = log ? (x[k * inner + j] - m[j]) - f[j] : o * f[j];
    }
}

template <class T>
void softmax_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[0];
  const int axis = int(c.i[0]);
  const bool log = c.i[1] != 0;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= vx.shape[d];
  for (int d = axis + 1; d < vx.ndim; ++d) inner *= vx.shape[d];
  const int64_t K = vx.shape[axis];
  const DenseIn<T> X(ex, vx);
  DenseOut<T> Y(c.outputs[0]);
  const T* x = X.get();
  T* y = Y.get();
  if (K > 0 && inner == 1) {
    parallel(ex, outer, std::max<int64_t>(1, kGrainHeavy / K), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) softmax_row(x + r * K, y + r * K, K, log);
    });
  } else if (K > 0) {  // (an empty tensor never gets here: run_kernel skips kernels with empty outputs)
    const int64_t blocks = (inner + kCols - 1) / kCols;
    parallel(ex, outer * blocks, std::max<int64_t>(1, kGrainHeavy / (K * std::min(inner, kCols))),
             [&](int64_t b, int64_t e) {
               for (int64_t t = b; t < e; ++t) {
                 const int64_t o = t / blocks, c0 = (t % blocks) * kCols;
                 const int64_t off = o * K * inner + c0;
                 softmax_cols(x + off, y + off, K, inner, std::min(kCols, inner - c0), log);
               }
             });
  }
  Y.finish(ex);
}

// ---- softmax cross-entropy -----------------------------------------------------------------------

template <class T, class L>
KernelResult softmax_ce_typed(Exec& ex, const Call& c) {
  const auto& vx = c.inputs[0];
  const auto& vl = c.inputs[1];
  const auto& vo = c.outputs[0];
  const int64_t N = vx.shape[0], K = vx.shape[1];
  // Labels are checked up front (cheap, and the error names the first bad row deterministically).
  for (int64_t n = 0; n < N; ++n) {
    const int64_t l = int64_t(at<const L>(vl, n));
    if (l < 0 || l >= K)
      return fail(BRAID_ERR_KERNEL, "softmax_cross_entropy: label " + std::to_string(l) + " out of range [0, " +
                                        std::to_string(K) + ") at row " + std::to_string(n));
  }
  const DenseIn<T> X(ex, vx);
  const T* x = X.get();
  parallel(ex, N, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* row = x + n * K;
      const T m = fold_run<MaxR<T>>(row, K, 1);
      // log(sum exp(x - m)) - (x[label] - m): adding m back first and then subtracting x[label]
      // cancelled when the logits share a large offset (1e17 + ln 2 - 1e17 gave 0).
      const double shifted = double(row[int64_t(at<const L>(vl, n))]) - double(m);
      at<T>(vo, n) = T(std::log(sum_exp(row, K, m)) - shifted);
    }
  });
  return {};
}

}  // namespace

KernelResult k_batch_norm(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { batch_norm_typed<T>(ex, c); });
  return {};
}

KernelResult k_softmax(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { softmax_typed<T>(ex, c); });
  return {};
}

KernelResult k_softmax_ce(const Call& c, Exec& ex) {
  KernelResult r = unsupported(c.op, c.inputs[1].dtype, "labels must be int32 or int64");
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) {
    visit_dtype(IntTypes{}, c.inputs[1].dtype, [&]<class L>(Tag<L>) { r = softmax_ce_typed<T, L>(ex, c); });
  });
  return r;
}

}  // namespace braid::cpu::kern
