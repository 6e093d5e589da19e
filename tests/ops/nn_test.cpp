// Conformance: conv2d, pool2d, batch norm, softmax/log-softmax, softmax cross-entropy and dropout.
#include <cmath>

#include "harness.h"

using harness::context;
using tol::Kind;

TEST_CASE("nn: conv2d with stride, padding, with and without bias") {
  struct Case {
    int64_t n, c, h, w, k, r, s;
    std::array<int, 2> stride, padding;
    bool bias;
  };
  const Case cases[] = {
      {1, 1, 5, 5, 1, 3, 3, {1, 1}, {0, 0}, false},
      {2, 3, 7, 9, 4, 3, 3, {1, 1}, {1, 1}, true},
      {1, 2, 8, 7, 3, 3, 2, {2, 1}, {1, 0}, true},
      {3, 1, 1, 1, 2, 1, 1, {1, 1}, {0, 0}, true},
      {1, 4, 6, 6, 2, 5, 5, {2, 2}, {2, 2}, false},
      {2, 3, 11, 13, 5, 1, 1, {3, 3}, {0, 0}, true},
      {1, 3, 9, 9, 8, 3, 3, {2, 2}, {1, 1}, false},
      {2, 16, 12, 10, 7, 3, 3, {1, 1}, {1, 1}, true},
      // CPU direct path (stride 1, few taps): rows wider than one register block, and tiny rows
      {2, 1, 9, 41, 5, 3, 3, {1, 1}, {1, 1}, true},
      {1, 2, 4, 5, 3, 2, 2, {1, 1}, {0, 0}, false},
      // CPU channel-lane path (float32, more than 8 output channels, stride 1 along rows, at least
      // two images per core): partial last block, lone last block, tiles of several widths, rows of 1
      {4, 3, 9, 13, 9, 3, 3, {1, 1}, {1, 1}, true},
      {4, 5, 13, 13, 50, 5, 5, {1, 1}, {0, 0}, true},
      {4, 2, 6, 30, 17, 3, 2, {2, 1}, {1, 0}, false},
      {4, 2, 5, 40, 33, 2, 3, {1, 1}, {0, 2}, true},
      {4, 1, 3, 3, 64, 3, 3, {1, 1}, {1, 1}, true},
      {4, 3, 7, 1, 12, 3, 1, {3, 1}, {1, 0}, true},
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", x ", c.n, "x", c.c, "x", c.h, "x", c.w, ", w ", c.k,
               "x", c.c, "x", c.r, "x", c.s, ", stride ", c.stride[0], ",", c.stride[1], ", padding ", c.padding[0],
               ",", c.padding[1], c.bias ? ", bias" : ", no bias");
          const ref::Array x = harness::random_array({c.n, c.c, c.h, c.w}, -1, 1, dt, 111);
          const ref::Array w = harness::random_array({c.k, c.c, c.r, c.s}, -1, 1, dt, 112);
          const ref::Array b = harness::random_array({c.k}, -1, 1, dt, 113);
          const braid::Tensor tb = c.bias ? harness::upload(dev.index, dt, b) : braid::Tensor();
          const auto y = braid::conv2d(harness::upload(dev.index, dt, x), harness::upload(dev.index, dt, w), tb,
                                       {.stride = {c.stride[0], c.stride[1]}, .padding = {c.padding[0], c.padding[1]}});
          CHECK(y.dtype() == dt);
          CHECK_CLOSE(harness::download(y), ref::conv2d(x, w, c.bias ? &b : nullptr, c.stride, c.padding),
                      tol::of(Kind::gemm, dt));
        }
    });
  }
}

TEST_CASE("nn: conv2d with NULL params means stride 1 and no padding") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array x = harness::random_array({1, 2, 5, 4}, -1, 1, BRAID_FLOAT64, 114);
      const ref::Array w = harness::random_array({3, 2, 2, 3}, -1, 1, BRAID_FLOAT64, 115);
      const auto tx = harness::upload(dev.index, BRAID_FLOAT64, x), tw = harness::upload(dev.index, BRAID_FLOAT64, w);
      braid_tensor out = nullptr;
      braid::check(braid_conv2d(tx.get(), tw.get(), nullptr, nullptr, &out));  // throws; UNSUPPORTED skips
      const auto y = braid::Tensor::adopt(out);
      CHECK_CLOSE(harness::download(y), ref::conv2d(x, w, nullptr, {1, 1}, {0, 0}), tol::of(Kind::gemm, BRAID_FLOAT64));
    });
  }
}

TEST_CASE("nn: max and average pooling with stride and padding") {
  struct Case {
    ref::Shape shape;
    std::array<int, 2> kernel, stride, padding;
  };
  const Case cases[] = {
      {{1, 1, 4, 4}, {2, 2}, {0, 0}, {0, 0}},  // stride 0 = kernel
      {{2, 3, 7, 7}, {3, 3}, {1, 1}, {1, 1}},  // same-size output
      {{1, 2, 7, 7}, {2, 2}, {2, 2}, {1, 1}},  // odd input, padded border windows
      {{2, 1, 6, 5}, {3, 2}, {2, 1}, {1, 0}},  // non-square everything
      {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}}, {{1, 3, 9, 4}, {4, 4}, {3, 1}, {2, 2}},  // padding of half the kernel
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (braid_pool_kind kind : {BRAID_POOL_MAX, BRAID_POOL_AVG})
          for (const Case& c : cases) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), kind == BRAID_POOL_MAX ? ", max" : ", avg",
                 " pool of ", ref::to_string(c.shape), ", kernel ", c.kernel[0], "x", c.kernel[1], ", stride ",
                 c.stride[0], ",", c.stride[1], ", padding ", c.padding[0], ",", c.padding[1]);
            // Negative values catch a max that counts padded cells as zeros.
            const ref::Array x = harness::random_array(c.shape, -3, -1, dt, 116);
            const auto y = braid::pool2d(harness::upload(dev.index, dt, x), {.kind = kind,
                                                                             .kernel = {c.kernel[0], c.kernel[1]},
                                                                             .stride = {c.stride[0], c.stride[1]},
                                                                             .padding = {c.padding[0], c.padding[1]}});
            CHECK_CLOSE(harness::download(y), ref::pool2d(x, kind, c.kernel, c.stride, c.padding, false),
                        tol::of(kind == BRAID_POOL_MAX ? Kind::exact : Kind::reduction, dt));
          }
    });
  }
}

TEST_CASE("nn: global max and average pooling") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (braid_pool_kind kind : {BRAID_POOL_MAX, BRAID_POOL_AVG})
          for (const ref::Shape& s : {ref::Shape{2, 3, 7, 5}, ref::Shape{1, 1, 1, 1}, ref::Shape{1, 2, 33, 1}}) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt),
                 kind == BRAID_POOL_MAX ? ", global max of " : ", global avg of ", ref::to_string(s));
            const ref::Array x = harness::random_array(s, -2, 2, dt, 117);
            // kernel/stride/padding are ignored when global is set; give values that would be invalid.
            const auto y =
                braid::pool2d(harness::upload(dev.index, dt, x),
                              {.kind = kind, .kernel = {0, 0}, .stride = {0, 0}, .padding = {0, 0}, .global = true});
            CHECK_CLOSE(harness::download(y), ref::pool2d(x, kind, {0, 0}, {0, 0}, {0, 0}, true),
                        tol::of(kind == BRAID_POOL_MAX ? Kind::exact : Kind::reduction, dt));
          }
    });
  }
}

TEST_CASE("nn: batch norm in training uses batch statistics and updates the running ones") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const ref::Shape& s : {ref::Shape{4, 3}, ref::Shape{2, 3, 5, 7}, ref::Shape{2, 1, 1, 1}}) {
          for (const auto& hyper : {std::pair{1e-5, 0.1}, std::pair{1e-3, 0.25}}) {
            const double eps = hyper.first,
                         momentum = hyper.second;  // named, not bound: clang < 16 cannot capture bindings in INFO
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", x ", ref::to_string(s), ", eps ", eps,
                 ", momentum ", momentum);
            const int64_t C = s[1];
            const ref::Array x = harness::random_array(s, -2, 3, dt, 118);
            const ref::Array gamma = harness::random_array({C}, 0.5, 1.5, dt, 119),
                             beta = harness::random_array({C}, -1, 1, dt, 120);
            const ref::Array rm = harness::random_array({C}, -1, 1, dt, 121),
                             rv = harness::random_array({C}, 0.5, 2, dt, 122);
            const auto trm = harness::upload(dev.index, dt, rm), trv = harness::upload(dev.index, dt, rv);
            const auto r = braid::batch_norm(harness::upload(dev.index, dt, x), harness::upload(dev.index, dt, gamma),
                                             harness::upload(dev.index, dt, beta), trm, trv,
                                             {.eps = eps, .momentum = momentum, .training = true});
            const auto want = ref::batch_norm(x, gamma, beta, rm, rv, eps, momentum, true);
            const double t = tol::of(Kind::reduction, dt);
            CHECK_CLOSE(harness::download(r.y), want.y, t);
            CHECK_CLOSE(harness::download(r.save_mean), want.save_mean, t);
            CHECK_CLOSE(harness::download(r.save_invstd), want.save_invstd, t);
            CHECK_CLOSE(harness::download(trm), want.running_mean, t);
            CHECK_CLOSE(harness::download(trv), want.running_var, t);
          }
        }
    });
  }
}

TEST_CASE("nn: batch norm in inference uses and keeps the running statistics") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const ref::Shape& s : {ref::Shape{4, 3}, ref::Shape{2, 3, 5, 7}}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", x ", ref::to_string(s));
          const int64_t C = s[1];
          const ref::Array x = harness::random_array(s, -2, 3, dt, 123);
          const ref::Array gamma = harness::random_array({C}, 0.5, 1.5, dt, 124),
                           beta = harness::random_array({C}, -1, 1, dt, 125);
          const ref::Array rm = harness::random_array({C}, -1, 1, dt, 126),
                           rv = harness::random_array({C}, 0.5, 2, dt, 127);
          const auto trm = harness::upload(dev.index, dt, rm), trv = harness::upload(dev.index, dt, rv);
          const auto r = braid::batch_norm(harness::upload(dev.index, dt, x), harness::upload(dev.index, dt, gamma),
                                           harness::upload(dev.index, dt, beta), trm, trv, {.training = false});
          const auto want = ref::batch_norm(x, gamma, beta, rm, rv, 1e-5, 0.1, false);
          const double t = tol::of(Kind::reduction, dt);
          CHECK_CLOSE(harness::download(r.y), want.y, t);
          // braid_backend.h: in inference the kernel writes the running mean and 1/sqrt(var+eps) here.
          CHECK_CLOSE(harness::download(r.save_mean), want.save_mean, t);
          CHECK_CLOSE(harness::download(r.save_invstd), want.save_invstd, t);
          CHECK_CLOSE(harness::download(trm), rm, 0.0);
          CHECK_CLOSE(harness::download(trv), rv, 0.0);
        }
    });
  }
}

TEST_CASE("nn: batch norm with NULL save_mean/save_invstd") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array x = harness::random_array({5, 2}, -1, 1, BRAID_FLOAT64, 128);
      const ref::Array one({2}, 1.0), zero({2}, 0.0);
      const auto tx = harness::upload(dev.index, BRAID_FLOAT64, x), g = harness::upload(dev.index, BRAID_FLOAT64, one),
                 b = harness::upload(dev.index, BRAID_FLOAT64, zero),
                 rm = harness::upload(dev.index, BRAID_FLOAT64, zero),
                 rv = harness::upload(dev.index, BRAID_FLOAT64, one);
      const braid_batch_norm_params p = BRAID_BATCH_NORM_PARAMS_INIT;
      braid_tensor out = nullptr;
      braid::check(braid_batch_norm(tx.get(), g.get(), b.get(), rm.get(), rv.get(), &p, &out, nullptr, nullptr));
      const auto y = braid::Tensor::adopt(out);
      CHECK_CLOSE(harness::download(y), ref::batch_norm(x, one, zero, zero, one, 1e-5, 0.1, true).y,
                  tol::of(Kind::reduction, BRAID_FLOAT64));
    });
  }
}

// No channels: nothing to normalise. Training divided the element count by the channel count
// (SIGFPE, the process killed); an empty result, as inference already gave.
TEST_CASE("nn: batch norm of an input without channels gives an empty result") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      for (bool training : {true, false})
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 0}, std::vector<int64_t>{2, 0, 3, 3}}) {
          const ref::Array none({0}, 0.0);
          const auto x = harness::upload(dev.index, BRAID_FLOAT32, ref::Array(shape, 0.0));
          const auto g = harness::upload(dev.index, BRAID_FLOAT32, none),
                     b = harness::upload(dev.index, BRAID_FLOAT32, none),
                     rm = harness::upload(dev.index, BRAID_FLOAT32, none),
                     rv = harness::upload(dev.index, BRAID_FLOAT32, none);
          braid::BatchNormOptions o;
          o.training = training;
          const auto r = braid::batch_norm(x, g, b, rm, rv, o);
          CHECK(r.y.shape() == shape);
          CHECK(r.save_mean.shape() == std::vector<int64_t>{0});
        }
    });
  }
}

TEST_CASE("nn: softmax and log-softmax along each axis") {
  struct Case {
    ref::Shape shape;
    int32_t axis;
  };
  const Case cases[] = {{{1, 7}, -1},   {{3, 33}, 1},    {{3, 33}, 0}, {{2, 3, 5}, 1},
                        {{2, 3, 5}, 0}, {{2, 3, 5}, -1}, {{1}, 0}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Case& c : cases)
          for (bool log : {false, true}) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), log ? ", log_softmax of " : ", softmax of ",
                 ref::to_string(c.shape), " along ", c.axis);
            // Wide logits: a kernel that does not subtract the maximum overflows exp().
            const ref::Array x = harness::random_array(c.shape, -60, 60, dt, 131);
            const auto t = harness::upload(dev.index, dt, x);
            const auto y = log ? braid::log_softmax(t, c.axis) : braid::softmax(t, c.axis);
            CHECK_CLOSE(harness::download(y), ref::softmax(x, c.axis, log), tol::of(Kind::reduction, dt));
          }
    });
  }
}

TEST_CASE("nn: softmax cross-entropy with int32 and int64 labels") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (braid_dtype lt : harness::kIntTypes)
          for (const auto& nk : {std::pair<int64_t, int64_t>{5, 7}, {1, 1}, {33, 3}, {4, 100}}) {
            const int64_t n = nk.first, k = nk.second;
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), " logits ", n, "x", k, ", ", harness::dtype_name(lt),
                 " labels");
            const ref::Array logits = harness::random_array({n, k}, -20, 20, dt, 132);
            const ref::Array labels = harness::random_ints({n}, 0, static_cast<int>(k), 133);
            const auto y = braid::softmax_cross_entropy(harness::upload(dev.index, dt, logits),
                                                        harness::upload(dev.index, lt, labels));
            CHECK(y.dtype() == dt);
            CHECK_CLOSE(harness::download(y), ref::softmax_cross_entropy(logits, harness::to_int64(labels)),
                        tol::of(Kind::reduction, dt));
          }
    });
  }
}

TEST_CASE("nn: dropout draws its mask from the Philox stream") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (double p : {0.0, 0.3, 0.5, 0.9, 1.0}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", p ", p);
          const ref::Array x = harness::random_array({7, 33}, -2, 2, dt, 134);
          const auto tx = harness::upload(dev.index, dt, x);
          const uint64_t seed = 4242;
          context().set_seed(seed);
          const auto r = braid::dropout(tx, p);  // draw 0
          const auto want = ref::dropout(x, p, seed, 0);
          CHECK(r.mask.dtype() == dt);
          CHECK_CLOSE(harness::download(r.mask), want.mask, 0.0);
          CHECK_CLOSE(harness::download(r.y), want.y, tol::of(Kind::compound, dt));

          // mask may be NULL; the call still takes the next draw.
          braid_tensor y = nullptr;
          braid::check(braid_dropout(tx.get(), p, &y, nullptr));
          CHECK_CLOSE(harness::download(braid::Tensor::adopt(y)), ref::dropout(x, p, seed, 1).y,
                      tol::of(Kind::compound, dt));
        }
    });
  }
}

TEST_CASE("nn: dropout with p = 1 gives x * 0 and an all-zero mask (as PyTorch: NaN where x is inf or NaN)") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        ref::Array x = harness::random_array({5, 9}, -2, 2, dt, 135);
        x.data[0] = INFINITY;
        x.data[1] = -INFINITY;
        x.data[2] = NAN;
        const auto r = braid::dropout(harness::upload(dev.index, dt, x), 1.0);
        const ref::Array zeros(x.shape);
        const auto y = harness::download(r.y);
        CHECK(std::isnan(y.data[0]));
        CHECK(std::isnan(y.data[1]));
        CHECK(std::isnan(y.data[2]));
        for (size_t i = 3; i < y.data.size(); ++i) CHECK(y.data[i] == 0.0);
        CHECK_CLOSE(harness::download(r.mask), zeros, 0.0);
      }
    });
  }
}

TEST_CASE("nn: pooling with a kernel far larger than the image reads only the image") {
  // Padding up to half the kernel: every window covers the whole 4x4 ramp. The Vulkan shader scanned
  // all kh * kw cells and came back wrong past a kernel of 8193.
  std::vector<float> ramp(16);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = float(i);
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      const auto x = braid::Tensor::from_vector(context(), dev.index, {1, 1, 4, 4}, ramp);
      for (int k : {8193, 16385, 32769}) {
        for (braid_pool_kind kind : {BRAID_POOL_MAX, BRAID_POOL_AVG}) {
          INFO("device ", dev.id, ", kernel ", k, kind == BRAID_POOL_MAX ? ", max" : ", avg");
          const auto y =
              braid::pool2d(x, {.kind = kind, .kernel = {k, k}, .stride = {1, 1}, .padding = {k / 2, k / 2}});
          CHECK(y.shape() == std::vector<int64_t>{1, 1, 4, 4});
          for (float v : y.to_vector<float>()) CHECK(v == (kind == BRAID_POOL_MAX ? 15.0f : 7.5f));
        }
      }
    });
  }
}

TEST_CASE("nn: a convolution whose output has more elements than int64 counts is refused") {
  // Padding 2^31 - 1 on both sides: a 2^32 x 2^32 output per plane, whose element count wrapped to 0;
  // the call succeeded and the CPU kernel then crashed.
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = braid::Tensor::ones(context(), dev.index, BRAID_FLOAT32, {1, 1, 4, 4});
      const auto w = braid::Tensor::ones(context(), dev.index, BRAID_FLOAT32, {1, 1, 3, 3});
      braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
      p.padding[0] = p.padding[1] = INT32_MAX;
      braid_tensor y = nullptr;
      CHECK(braid_conv2d(x.get(), w.get(), nullptr, &p, &y) == BRAID_ERR_OUT_OF_MEMORY);
      CHECK(y == nullptr);
    });
  }
}
