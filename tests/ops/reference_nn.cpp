// Reference: convolution, pooling, batch norm, softmax and softmax cross-entropy, in float64 loops
// that follow the definitions in braid.h literally.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "reference.h"

namespace ref {

namespace {

struct ConvShape {
  int64_t N, C, H, W, K, R, S, P, Q;
};

ConvShape conv_shape(const Shape& x, const Shape& w, std::array<int, 2> stride, std::array<int, 2> padding) {
  if (w[1] != x[1]) throw std::invalid_argument("ref::conv2d: channel mismatch");
  return {x[0],
          x[1],
          x[2],
          x[3],
          w[0],
          w[2],
          w[3],
          (x[2] + 2 * padding[0] - w[2]) / stride[0] + 1,
          (x[3] + 2 * padding[1] - w[3]) / stride[1] + 1};
}

// f(y index, x index, w index) for every product x * w that conv2d sums into an output element (taps
// over zero padding skipped); the forward op and both of its gradients are this one sum read three ways.
template <class F>
void for_each_tap(const ConvShape& g, std::array<int, 2> stride, std::array<int, 2> padding, F&& f) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q) {
          const size_t yi = static_cast<size_t>(((n * g.K + k) * g.P + p) * g.Q + q);
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t t = 0; t < g.S; ++t) {
                const int64_t h = p * stride[0] - padding[0] + r, v = q * stride[1] - padding[1] + t;
                if (h < 0 || h >= g.H || v < 0 || v >= g.W) continue;  // zero padding
                f(yi, static_cast<size_t>(((n * g.C + c) * g.H + h) * g.W + v),
                  static_cast<size_t>(((k * g.C + c) * g.R + r) * g.S + t));
              }
        }
}

}  // namespace

Array conv2d(const Array& x, const Array& w, const Array* bias, std::array<int, 2> stride, std::array<int, 2> padding) {
  const ConvShape g = conv_shape(x.shape, w.shape, stride, padding);
  Array out({g.N, g.K, g.P, g.Q});
  if (bias)
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = bias->data[i / static_cast<size_t>(g.P * g.Q) % g.K];
  for_each_tap(g, stride, padding, [&](size_t yi, size_t xi, size_t wi) { out.data[yi] += x.data[xi] * w.data[wi]; });
  return out;
}

Array conv2d_backward_data(const Array& dy, const Array& w, const Shape& x_shape, std::array<int, 2> stride,
                           std::array<int, 2> padding) {
  const ConvShape g = conv_shape(x_shape, w.shape, stride, padding);
  Array dx(x_shape);
  for_each_tap(g, stride, padding, [&](size_t yi, size_t xi, size_t wi) { dx.data[xi] += dy.data[yi] * w.data[wi]; });
  return dx;
}

Array conv2d_backward_weight(const Array& dy, const Array& x, const Shape& w_shape, std::array<int, 2> stride,
                             std::array<int, 2> padding) {
  const ConvShape g = conv_shape(x.shape, w_shape, stride, padding);
  Array dw(w_shape);
  for_each_tap(g, stride, padding, [&](size_t yi, size_t xi, size_t wi) { dw.data[wi] += dy.data[yi] * x.data[xi]; });
  return dw;
}

Array pool2d(const Array& x, braid_pool_kind kind, std::array<int, 2> kernel, std::array<int, 2> stride,
             std::array<int, 2> padding, bool global) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  if (global) kernel = {static_cast<int>(H), static_cast<int>(W)}, stride = {1, 1}, padding = {0, 0};
  const int64_t kh = kernel[0], kw = kernel[1];
  const int64_t sh = stride[0] ? stride[0] : kh, sw = stride[1] ? stride[1] : kw;
  const int64_t ph = padding[0], pw = padding[1];
  const int64_t P = (H + 2 * ph - kh) / sh + 1, Q = (W + 2 * pw - kw) / sw + 1;
  Array out({N, C, P, Q});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          // Padded cells are skipped: ignored by max, excluded from the average's count.
          double acc = kind == BRAID_POOL_MAX ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t r = 0; r < kh; ++r)
            for (int64_t t = 0; t < kw; ++t) {
              const int64_t h = p * sh - ph + r, v = q * sw - pw + t;
              if (h < 0 || h >= H || v < 0 || v >= W) continue;
              const double val = x.at(std::array{n, c, h, v});
              acc = kind == BRAID_POOL_MAX ? std::max(acc, val) : acc + val;
              ++count;
            }
          out.at(std::array{n, c, p, q}) = kind == BRAID_POOL_MAX ? acc : acc / static_cast<double>(count);
        }
  return out;
}

BatchNormResult batch_norm(const Array& x, const Array& gamma, const Array& beta, const Array& running_mean,
                           const Array& running_var, double eps, double momentum, bool training) {
  const int64_t N = x.shape[0], C = x.shape[1];
  const int64_t inner = x.numel() / (N * C);  // H*W, or 1 for N,C input
  const auto at = [&](int64_t n, int64_t c, int64_t i) { return x.data[static_cast<size_t>((n * C + c) * inner + i)]; };

  BatchNormResult r{Array(x.shape), Array({C}), Array({C}), running_mean, running_var};
  for (int64_t c = 0; c < C; ++c) {
    const auto uc = static_cast<size_t>(c);
    double mean = running_mean.data[uc], var = running_var.data[uc];
    if (training) {
      const double m = static_cast<double>(N * inner);
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) s += at(n, c, i);
      mean = s / m;
      double ss = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) ss += (at(n, c, i) - mean) * (at(n, c, i) - mean);
      var = ss / m;                            // biased: used to normalise
      const double unbiased = ss / (m - 1.0);  // stored in the running estimate
      r.running_mean.data[uc] = (1.0 - momentum) * running_mean.data[uc] + momentum * mean;
      r.running_var.data[uc] = (1.0 - momentum) * running_var.data[uc] + momentum * unbiased;
    }
    const double invstd = 1.0 / std::sqrt(var + eps);
    r.save_mean.data[uc] = mean;
    r.save_invstd.data[uc] = invstd;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        r.y.data[static_cast<size_t>((n * C + c) * inner + i)] =
            (at(n, c, i) - mean) * invstd * gamma.data[uc] + beta.data[uc];
  }
  return r;
}

Array softmax(const Array& x, int32_t axis, bool log) {
  const int64_t nd = x.ndim();
  const auto ax = static_cast<size_t>(axis < 0 ? axis + nd : axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < ax; ++i) outer *= x.shape[i];
  for (size_t i = ax + 1; i < x.shape.size(); ++i) inner *= x.shape[i];
  const int64_t len = x.shape[ax];
  Array out(x.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const auto idx = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x.data[idx(k)]);
      double s = 0.0;
      for (int64_t k = 0; k < len; ++k) s += std::exp(x.data[idx(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        out.data[idx(k)] = log ? x.data[idx(k)] - mx - std::log(s) : std::exp(x.data[idx(k)] - mx) / s;
    }
  return out;
}

Array softmax_cross_entropy(const Array& logits, std::span<const int64_t> labels) {
  const int64_t N = logits.shape[0], K = logits.shape[1];
  const Array ls = softmax(logits, 1, true);
  Array out({N});
  for (int64_t n = 0; n < N; ++n) {
    const int64_t l = labels[static_cast<size_t>(n)];
    if (l < 0 || l >= K) throw std::invalid_argument("ref::softmax_cross_entropy: label out of range");
    out.data[static_cast<size_t>(n)] = -ls.data[static_cast<size_t>(n * K + l)];
  }
  return out;
}

}  // namespace ref
