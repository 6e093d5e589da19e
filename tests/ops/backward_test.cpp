// Conformance of the backward ops (plugin ABI 1.1 backward kernels) on every device, float32 and
// float64, against float64 references: each gradient is the vector-Jacobian product dy^T J of the
// reference forward op, taken by differences of the reference (exact for the linear conv and average
// pool, for max pool away from ties, central differences for batch norm).
#include <functional>
#include <limits>

#include "harness.h"

using tol::Kind;

namespace {

// dy . d f(x) / d x_j for every j of x, with f a float64 reference.
ref::Array vjp(const std::function<ref::Array(const ref::Array&)>& f, const ref::Array& x, const ref::Array& dy,
               double h) {
  ref::Array g(x.shape);
  ref::Array p = x;
  for (size_t j = 0; j < x.data.size(); ++j) {
    p.data[j] = x.data[j] + h;
    const ref::Array up = f(p);
    p.data[j] = x.data[j] - h;
    const ref::Array down = f(p);
    p.data[j] = x.data[j];
    double s = 0;
    for (size_t i = 0; i < dy.data.size(); ++i) s += dy.data[i] * (up.data[i] - down.data[i]);
    g.data[j] = s / (2 * h);
  }
  return g;
}

// Distinct values on the dtype's grid, at least (hi - lo) / n apart (no ties for max pooling).
ref::Array distinct(const ref::Shape& shape, double lo, double hi, braid_dtype dt) {
  ref::Array a(shape);
  const size_t n = a.data.size();
  for (size_t i = 0; i < n; ++i) a.data[(i * 7919) % n] = lo + (hi - lo) * double(i) / double(n);
  return ref::round_to(dt, a);
}

}  // namespace

TEST_CASE("backward: conv2d data and weight gradients") {
  struct Case {
    int64_t n, c, h, w, k, r, s;
    std::array<int, 2> stride, padding;
  };
  const Case cases[] = {{2, 3, 7, 6, 4, 3, 3, {1, 1}, {1, 1}},
                        {1, 2, 8, 7, 3, 3, 2, {2, 1}, {1, 0}},
                        {3, 1, 5, 5, 2, 1, 1, {1, 1}, {0, 0}},
                        {2, 4, 9, 9, 5, 5, 5, {2, 2}, {2, 2}},
                        {4, 1, 10, 10, 20, 3, 3, {1, 1}, {0, 0}},
                        // CPU direct weight-gradient path (stride 1, <= 32 taps): rows that are not whole
                        // vectors, blocks of taps (9, 18 = 12 + 6, 30 = 12 + 12 + 6), padding, rows > 32
                        {2, 1, 12, 21, 6, 3, 3, {1, 1}, {0, 0}},
                        {1, 2, 9, 10, 3, 3, 3, {1, 1}, {1, 1}},
                        {2, 3, 6, 7, 2, 2, 5, {1, 1}, {1, 2}},
                        {1, 1, 5, 40, 2, 1, 3, {1, 1}, {0, 1}},
                        // CPU col2im: LeNet's second layer in small (vector path), rows too wide for it
                        {2, 3, 13, 13, 4, 5, 5, {1, 1}, {0, 0}},
                        {1, 1, 3, 70, 2, 2, 3, {1, 1}, {0, 0}},
                        // CPU channel-lane weight gradient (float32, AVX-512, more than 32 taps, at least
                        // two images per core): a partial block pair, a lone block, S up to 12, row stride,
                        // padding, an uneven split of the images (small: the reference gradient is numeric)
                        {5, 2, 7, 7, 20, 5, 5, {1, 1}, {0, 0}},
                        {4, 1, 5, 14, 12, 3, 12, {2, 1}, {1, 2}},
                        {4, 33, 2, 3, 9, 1, 1, {1, 1}, {0, 0}},
                        // a padded 1x1 convolution: oneDNN runs it as im2col + gemm with a scratchpad
                        {4, 6, 3, 3, 5, 1, 1, {1, 1}, {1, 0}}};
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes)
      for (const Case& c : cases) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", x ", c.n, "x", c.c, "x", c.h, "x", c.w, ", w ", c.k,
             "x", c.r, "x", c.s, ", stride ", c.stride[0], ",", c.stride[1], ", padding ", c.padding[0], ",",
             c.padding[1]);
        const ref::Array x = harness::random_array({c.n, c.c, c.h, c.w}, -1, 1, dt, 211);
        const ref::Array w = harness::random_array({c.k, c.c, c.r, c.s}, -1, 1, dt, 212);
        const ref::Array y = ref::conv2d(x, w, nullptr, c.stride, c.padding);
        const ref::Array dy = harness::random_array(y.shape, -1, 1, dt, 213);
        braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
        p.stride[0] = c.stride[0], p.stride[1] = c.stride[1], p.padding[0] = c.padding[0], p.padding[1] = c.padding[1];
        const auto tx = harness::upload(dev.index, dt, x), tw = harness::upload(dev.index, dt, w);
        const auto tdy = harness::upload(dev.index, dt, dy);
        braid_tensor dx = nullptr, dw = nullptr;
        REQUIRE(braid_conv2d_backward_data(tdy.get(), tw.get(), x.shape.data(), &p, &dx) == BRAID_OK);
        REQUIRE(braid_conv2d_backward_weight(tdy.get(), tx.get(), w.shape.data(), &p, &dw) == BRAID_OK);
        const auto gx = braid::Tensor::adopt(dx), gw = braid::Tensor::adopt(dw);
        CHECK_CLOSE(
            harness::download(gx),
            vjp([&](const ref::Array& v) { return ref::conv2d(v, w, nullptr, c.stride, c.padding); }, x, dy, 1.0),
            tol::of(Kind::gemm, dt));
        CHECK_CLOSE(
            harness::download(gw),
            vjp([&](const ref::Array& v) { return ref::conv2d(x, v, nullptr, c.stride, c.padding); }, w, dy, 1.0),
            tol::of(Kind::gemm, dt));
      }
}

// A first layer's weight gradient: few taps (C R S = 9 or 18) summed over more than 4096 (n, p, q)
// terms, which a backend may compute differently from the general case (the Vulkan backend splits
// each tap's sum over a workgroup instead of tiling a gemm). Only dw: the data gradient's numerical
// reference would cost a forward pass per input element.
TEST_CASE("backward: conv2d weight gradient with few taps and a long sum") {
  struct Case {
    int64_t n, c, h, w, k;
    std::array<int, 2> stride, padding;
  };
  const Case cases[] = {{5, 1, 30, 30, 3, {1, 1}, {1, 1}}, {9, 2, 33, 31, 2, {2, 1}, {0, 1}}};
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes)
      for (const Case& c : cases) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", x ", c.n, "x", c.c, "x", c.h, "x", c.w, ", k ", c.k);
        const ref::Array x = harness::random_array({c.n, c.c, c.h, c.w}, -1, 1, dt, 221);
        const ref::Array w = harness::random_array({c.k, c.c, 3, 3}, -1, 1, dt, 222);
        const ref::Array y = ref::conv2d(x, w, nullptr, c.stride, c.padding);
        const ref::Array dy = harness::random_array(y.shape, -1, 1, dt, 223);
        braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
        p.stride[0] = c.stride[0], p.stride[1] = c.stride[1], p.padding[0] = c.padding[0], p.padding[1] = c.padding[1];
        braid_tensor dw = nullptr;
        REQUIRE(braid_conv2d_backward_weight(harness::upload(dev.index, dt, dy).get(),
                                             harness::upload(dev.index, dt, x).get(), w.shape.data(), &p,
                                             &dw) == BRAID_OK);
        CHECK_CLOSE(
            harness::download(braid::Tensor::adopt(dw)),
            vjp([&](const ref::Array& v) { return ref::conv2d(x, v, nullptr, c.stride, c.padding); }, w, dy, 1.0),
            tol::of(Kind::gemm, dt));
      }
}

// An inf in the image reaches exactly the weight gradients of the taps that read it (the CPU's direct
// path pads rows with zero gradients, and 0 * inf must not leak NaN into the other taps).
TEST_CASE("backward: conv2d weight gradient with an inf in the image") {
  const int64_t N = 2, C = 1, H = 6, W = 7, K = 3, R = 3, S = 3, P = H - R + 1, Q = W - S + 1;
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes) {
      INFO("device ", dev.id, ", ", harness::dtype_name(dt));
      ref::Array x = harness::random_array({N, C, H, W}, -1, 1, dt, 221);
      x.data[2 * W + 6] = std::numeric_limits<double>::infinity();                  // image 0, row 2, last column
      const ref::Array dy = harness::random_array({N, K, P, Q}, 0.25, 1, dt, 222);  // positive: +inf, no NaN
      ref::Array want({K, C, R, S});
      for (int64_t k = 0; k < K; ++k)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t s = 0; s < S; ++s) {
            double sum = 0;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t p = 0; p < P; ++p)
                for (int64_t q = 0; q < Q; ++q)
                  sum += dy.data[((n * K + k) * P + p) * Q + q] * x.data[(n * H + p + r) * W + q + s];
            want.data[(k * R + r) * S + s] = sum;
          }
      braid_tensor dw = nullptr;
      const int64_t ws[4] = {K, C, R, S};
      REQUIRE(braid_conv2d_backward_weight(harness::upload(dev.index, dt, dy).get(),
                                           harness::upload(dev.index, dt, x).get(), ws, nullptr, &dw) == BRAID_OK);
      CHECK_CLOSE(harness::download(braid::Tensor::adopt(dw)), want, tol::of(Kind::gemm, dt));
    }
}

TEST_CASE("backward: max and average pooling") {
  struct Case {
    ref::Shape shape;
    braid_pool_kind kind;
    std::array<int, 2> kernel, stride, padding;
  };
  const Case cases[] = {
      {{2, 3, 6, 6}, BRAID_POOL_AVG, {2, 2}, {2, 2}, {0, 0}}, {{2, 3, 7, 7}, BRAID_POOL_AVG, {2, 2}, {2, 2}, {0, 0}},
      {{2, 3, 6, 6}, BRAID_POOL_MAX, {2, 2}, {2, 2}, {0, 0}}, {{1, 2, 7, 7}, BRAID_POOL_MAX, {3, 3}, {2, 2}, {1, 1}},
      {{2, 1, 6, 5}, BRAID_POOL_AVG, {3, 2}, {2, 1}, {1, 0}}, {{1, 2, 5, 5}, BRAID_POOL_MAX, {3, 3}, {1, 1}, {1, 1}},
  };
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes)
      for (const Case& c : cases) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", ", ref::to_string(c.shape), c.kind ? " avg" : " max",
             ", kernel ", c.kernel[0], "x", c.kernel[1], ", stride ", c.stride[0], ",", c.stride[1]);
        const ref::Array x = distinct(c.shape, -4, 4, dt);
        auto f = [&](const ref::Array& v) { return ref::pool2d(v, c.kind, c.kernel, c.stride, c.padding, false); };
        const ref::Array dy = harness::random_array(f(x).shape, -1, 1, dt, 214);
        braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
        p.kind = c.kind;
        for (int i = 0; i < 2; ++i) p.kernel[i] = c.kernel[i], p.stride[i] = c.stride[i], p.padding[i] = c.padding[i];
        braid_tensor dx = nullptr;
        REQUIRE(braid_pool2d_backward(harness::upload(dev.index, dt, dy).get(), harness::upload(dev.index, dt, x).get(),
                                      &p, &dx) == BRAID_OK);
        // Values are >= 8/numel apart: a step of 1e-3 never reorders a window.
        CHECK_CLOSE(harness::download(braid::Tensor::adopt(dx)), vjp(f, x, dy, 1e-3), tol::of(Kind::reduction, dt));
      }
}

TEST_CASE("backward: batch norm, training and inference") {
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes)
      for (bool training : {true, false})
        for (const ref::Shape& s : {ref::Shape{6, 3}, ref::Shape{2, 3, 3, 2}}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), training ? ", training " : ", inference ",
               ref::to_string(s));
          const ref::Array x = harness::random_array(s, -2, 2, dt, 215);
          const ref::Array gamma = harness::random_array({3}, 0.5, 1.5, dt, 216);
          const ref::Array beta = harness::random_array({3}, -1, 1, dt, 217);
          const ref::Array rm = harness::random_array({3}, -0.5, 0.5, dt, 218);
          const ref::Array rv = harness::random_array({3}, 0.5, 1.5, dt, 219);
          const ref::Array dy = harness::random_array(s, -1, 1, dt, 220);
          const auto stats = ref::batch_norm(x, gamma, beta, rm, rv, 1e-5, 0.1, training);
          auto y_of = [&](const ref::Array& xv, const ref::Array& gv, const ref::Array& bv) {
            return ref::batch_norm(xv, gv, bv, rm, rv, 1e-5, 0.1, training).y;
          };
          const ref::Array want_dx = vjp([&](const ref::Array& v) { return y_of(v, gamma, beta); }, x, dy, 1e-5);
          const ref::Array want_dg = vjp([&](const ref::Array& v) { return y_of(x, v, beta); }, gamma, dy, 1e-5);
          const ref::Array want_db = vjp([&](const ref::Array& v) { return y_of(x, gamma, v); }, beta, dy, 1e-5);
          const auto up = [&](const ref::Array& a) { return harness::upload(dev.index, dt, a); };
          braid_tensor dx = nullptr, dg = nullptr, db = nullptr;
          REQUIRE(braid_batch_norm_backward(
                      up(dy).get(), up(x).get(), up(gamma).get(), up(ref::round_to(dt, stats.save_mean)).get(),
                      up(ref::round_to(dt, stats.save_invstd)).get(), training, &dx, &dg, &db) == BRAID_OK);
          const double t = dt == BRAID_FLOAT32 ? 2e-5 : 1e-8;  // references by central differences
          CHECK_CLOSE(harness::download(braid::Tensor::adopt(dx)), want_dx, t);
          CHECK_CLOSE(harness::download(braid::Tensor::adopt(dg)), want_dg, t);
          CHECK_CLOSE(harness::download(braid::Tensor::adopt(db)), want_db, t);
        }
}

TEST_CASE("backward: softmax cross-entropy") {
  for (const auto& dev : harness::each_device())
    for (braid_dtype dt : harness::kFloatTypes)
      for (braid_dtype lt : harness::kIntTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", labels ", harness::dtype_name(lt));
        const ref::Array logits = harness::random_array({5, 7}, -3, 3, dt, 221);
        const ref::Array labels({5}, {0, 6, 3, 3, 1});
        const ref::Array dloss = harness::random_array({5}, -1, 1, dt, 222);
        ref::Array want = ref::softmax(logits, 1, false);
        for (int64_t n = 0; n < 5; ++n) {
          want.data[size_t(n * 7 + int64_t(labels.data[size_t(n)]))] -= 1.0;
          for (int64_t k = 0; k < 7; ++k) want.data[size_t(n * 7 + k)] *= dloss.data[size_t(n)];
        }
        braid_tensor d = nullptr;
        REQUIRE(braid_softmax_cross_entropy_backward(harness::upload(dev.index, dt, logits).get(),
                                                     harness::upload(dev.index, lt, labels).get(),
                                                     harness::upload(dev.index, dt, dloss).get(), &d) == BRAID_OK);
        CHECK_CLOSE(harness::download(braid::Tensor::adopt(d)), want, tol::of(Kind::transcend, dt) * 4);
      }
}

TEST_CASE("backward: a bad label fails the op; bad shapes fail the call") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    const auto logits =
        harness::upload(dev.index, BRAID_FLOAT32, harness::random_array({2, 3}, -1, 1, BRAID_FLOAT32, 1));
    const auto bad = harness::upload(dev.index, BRAID_INT32, ref::Array({2}, {0, 3}));
    const auto dloss = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({2}, {1, 1}));
    braid_tensor d = nullptr;
    REQUIRE(braid_softmax_cross_entropy_backward(logits.get(), bad.get(), dloss.get(), &d) == BRAID_OK);
    const auto gd = braid::Tensor::adopt(d);
    CHECK(braid_tensor_wait_to_read(gd.get()) == BRAID_ERR_KERNEL);
    // braid_wait_all reports (and clears) the failure, so later cases in this context start clean.
    CHECK(braid_wait_all(harness::context().get()) == BRAID_ERR_KERNEL);
    const auto short_dloss = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({1}, 1.0));
    CHECK(braid_softmax_cross_entropy_backward(logits.get(), bad.get(), short_dloss.get(), &d) == BRAID_ERR_SHAPE);
    CHECK(d == nullptr);
    const auto x =
        harness::upload(dev.index, BRAID_FLOAT32, harness::random_array({1, 1, 4, 4}, -1, 1, BRAID_FLOAT32, 2));
    const auto w =
        harness::upload(dev.index, BRAID_FLOAT32, harness::random_array({2, 1, 3, 3}, -1, 1, BRAID_FLOAT32, 3));
    const auto dy_bad =
        harness::upload(dev.index, BRAID_FLOAT32, harness::random_array({1, 2, 3, 3}, -1, 1, BRAID_FLOAT32, 4));
    const int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {2, 1, 3, 3};
    CHECK(braid_conv2d_backward_data(dy_bad.get(), w.get(), xs, nullptr, &d) == BRAID_ERR_SHAPE);
    CHECK(braid_conv2d_backward_weight(dy_bad.get(), x.get(), ws, nullptr, &d) == BRAID_ERR_SHAPE);
    CHECK(braid_conv2d_backward_data(dy_bad.get(), w.get(), nullptr, nullptr, &d) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(braid_pool2d_backward(dy_bad.get(), x.get(), nullptr, &d) == BRAID_ERR_SHAPE);  // 2x2 pool gives 1x1x2x2
    CHECK(braid_pool2d_backward(dy_bad.get(), x.get(), nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  }
}
