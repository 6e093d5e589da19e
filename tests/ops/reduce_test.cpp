// Conformance: reductions (sum, mean, max, min, L2 norm) over single, multiple and all axes, with and
// without keepdims, and argmax.
#include <cmath>
#include "harness.h"

using harness::context;
using tol::Kind;

namespace {

std::string reduce_name(braid_reduce_op op) {
  static const char* names[] = {"sum", "mean", "max", "min", "norm"};
  return names[op];
}

std::string axes_string(const std::vector<int32_t>& axes) {
  if (axes.empty()) return "all";
  std::string s;
  for (int32_t a : axes) {
    if (!s.empty()) s += ',';
    s += std::to_string(a);
  }
  return s;
}

}  // namespace

TEST_CASE("reduce: every op over single, multiple and all axes, with and without keepdims") {
  struct Case {
    ref::Shape shape;
    std::vector<int32_t> axes;
  };
  const Case cases[] = {
      {{7}, {}},
      {{7}, {0}},
      {{3, 33}, {}},
      {{3, 33}, {0}},
      {{3, 33}, {1}},
      {{3, 33}, {-1}},
      {{3, 33}, {0, 1}},
      {{2, 3, 7}, {1}},
      {{2, 3, 7}, {0, 2}},
      {{2, 3, 7}, {-1, 0}},
      {{2, 3, 7}, {}},
      {{1, 5, 1, 3}, {0, 2}},
      {{1, 5, 1, 3}, {1, 3}},
      {{2, 3, 4, 5}, {1, 2, 3}},
      {{1}, {0}},
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (int o = 0; o < BRAID_REDUCE_COUNT; ++o) {
          const auto op = static_cast<braid_reduce_op>(o);
          const Kind kind = op == BRAID_REDUCE_MAX || op == BRAID_REDUCE_MIN ? Kind::exact : Kind::reduction;
          for (const Case& c : cases)
            for (bool keep : {false, true}) {
              INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", ", reduce_name(op), " of ",
                   ref::to_string(c.shape), " over ", axes_string(c.axes), keep ? ", keepdims" : "");
              const ref::Array x = harness::random_array(c.shape, -2.0, 2.0, dt, 71);
              const auto y = braid::reduce(op, harness::upload(dev.index, dt, x), c.axes, keep);
              CHECK(y.dtype() == dt);
              CHECK_CLOSE(harness::download(y), ref::reduce(op, x, c.axes, keep), tol::of(kind, dt));
            }
        }
    });
  }
}

TEST_CASE("reduce: long sums and means stay within the summation tolerance") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        // Positive values: the relative error of any summation order is bounded by n*u, typically sqrt(n)*u.
        const ref::Array x = harness::random_array({1000, 3}, 0.0, 1.0, dt, 72);
        const auto t = harness::upload(dev.index, dt, x);
        CHECK_CLOSE(harness::download(braid::sum(t)), ref::reduce(BRAID_REDUCE_SUM, x, {}, false),
                    tol::of(Kind::reduction, dt));
        CHECK_CLOSE(harness::download(braid::mean(t, {0})), ref::reduce(BRAID_REDUCE_MEAN, x, {0}, false),
                    tol::of(Kind::reduction, dt));
        CHECK_CLOSE(harness::download(braid::norm(t, {0}, true)), ref::reduce(BRAID_REDUCE_NORM, x, {0}, true),
                    tol::of(Kind::reduction, dt));
      }
    });
  }
}

TEST_CASE("reduce: argmax along each axis gives int64 indices") {
  struct Case {
    ref::Shape shape;
    int32_t axis;
  };
  const Case cases[] = {{{7}, 0},       {{3, 33}, 0},   {{3, 33}, 1}, {{3, 33}, -1},
                        {{2, 3, 7}, 1}, {{2, 3, 7}, 2}, {{1, 1}, 0}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Case& c : cases)
          for (bool keep : {false, true}) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", argmax of ", ref::to_string(c.shape), " along ",
                 c.axis, keep ? ", keepdims" : "");
            const ref::Array x = harness::random_array(c.shape, -5.0, 5.0, dt, 73);  // ties are improbable
            const auto y = braid::argmax(harness::upload(dev.index, dt, x), c.axis, keep);
            CHECK(y.dtype() == BRAID_INT64);
            CHECK_CLOSE(harness::download(y), ref::argmax(x, c.axis, keep), 0.0);
          }
    });
  }
}

TEST_CASE("reduce: argmax returns the first of tied maxima") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array x({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2});
      const auto y = braid::argmax(harness::upload(dev.index, BRAID_FLOAT32, x), 1);
      CHECK(y.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
      // NaN is the maximum, and the first NaN wins over later ones (Vulkan's tree merge let a later
      // NaN win: 2 for [1, nan, nan], 256 for a row of 300 with NaN at every odd index).
      const double nan = std::nan("");
      std::vector<double> row(300, 0.0);
      for (size_t k = 1; k < row.size(); k += 2) row[k] = nan;
      for (braid_dtype dt : {BRAID_FLOAT32, BRAID_FLOAT64}) {
        CHECK(braid::argmax(harness::upload(dev.index, dt, ref::Array({3}, {1, nan, nan})), 0).to_vector<int64_t>() ==
              std::vector<int64_t>{1});
        CHECK(braid::argmax(harness::upload(dev.index, dt, ref::Array({300}, row)), 0).to_vector<int64_t>() ==
              std::vector<int64_t>{1});
      }
    });
  }
}

// torch.argmax takes integer tensors; ties give the first index (the Vulkan backend refused integers).
TEST_CASE("reduce: argmax of int32 and int64 along each axis, first of ties") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kIntTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array x({2, 5}, {3, -7, 3, 2, -7, -9, -8, -8, -9, -8});
        const auto t = harness::upload(dev.index, dt, x);
        CHECK(braid::argmax(t, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
        CHECK(braid::argmax(t, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0, 0});
        const ref::Array wide({300}, std::vector<double>(300, 5.0));
        CHECK(braid::argmax(harness::upload(dev.index, dt, wide), 0).to_vector<int64_t>() == std::vector<int64_t>{0});
      }
    });
  }
}

// NumPy and PyTorch sum integers into int64: torch.tensor([2**30] * 4, dtype=torch.int32).sum() is
// 4294967296 (int64), not the int32 wrap-around 0. max and min keep the input dtype.
TEST_CASE("reduce: integer sums are int64 and do not wrap; max and min keep the dtype") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kIntTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const double big = 1073741824.0;  // 2^30
        const auto all = braid::sum(harness::upload(dev.index, dt, ref::Array({4}, {big, big, big, big})));
        CHECK(all.dtype() == BRAID_INT64);
        CHECK(all.to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 32});
        // Over one axis, with keepdims, and below INT32_MIN.
        const ref::Array x({2, 3}, {-2147483648.0, -2147483648.0, 5, big, big, -7});
        const auto t = harness::upload(dev.index, dt, x);
        const auto rows = braid::sum(t, {1}, true);
        CHECK(rows.dtype() == BRAID_INT64);
        CHECK(rows.shape() == std::vector<int64_t>{2, 1});
        CHECK(rows.to_vector<int64_t>() == std::vector<int64_t>{-(int64_t{1} << 32) + 5, (int64_t{1} << 31) - 7});
        CHECK_CLOSE(harness::download(braid::sum(t, {0})), ref::reduce(BRAID_REDUCE_SUM, x, {0}, false), 0.0);
        for (braid_reduce_op op : {BRAID_REDUCE_MAX, BRAID_REDUCE_MIN}) {
          const auto y = braid::reduce(op, t, {1});
          CHECK(y.dtype() == dt);
          CHECK_CLOSE(harness::download(y), ref::reduce(op, x, {1}, false), 0.0);
        }
      }
    });
  }
}

TEST_CASE("reduce, argmax and softmax of a 0-d tensor take axis 0 or -1, as PyTorch") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = braid::Tensor::full(context(), dev.index, BRAID_FLOAT32, {}, 2.5);
      for (int32_t axis : {0, -1}) {
        CAPTURE(axis);
        for (bool keep : {false, true}) {
          const auto s = braid::sum(x, {axis}, keep);
          CHECK(s.shape().empty());  // still 0-d, keepdims or not
          CHECK(s.to_vector<float>() == std::vector<float>{2.5f});
        }
        CHECK(braid::reduce(BRAID_REDUCE_MAX, x, {axis}).to_vector<float>() == std::vector<float>{2.5f});
        const auto am = braid::argmax(x, axis);
        CHECK(am.shape().empty());
        CHECK(am.to_vector<int64_t>() == std::vector<int64_t>{0});
        CHECK(braid::softmax(x, axis).to_vector<float>() == std::vector<float>{1.0f});
        CHECK(braid::log_softmax(x, axis).to_vector<float>() == std::vector<float>{0.0f});
      }
      // Axis 1, or axis 0 twice, is still refused.
      braid_tensor out = nullptr;
      const int32_t one = 1, twice[2] = {0, -1};
      CHECK(braid_reduce(BRAID_REDUCE_SUM, x.get(), 1, &one, 0, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_reduce(BRAID_REDUCE_SUM, x.get(), 2, twice, 0, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_softmax(x.get(), 1, 0, &out) == BRAID_ERR_INVALID_ARGUMENT);
      // Gradients go through: d sum(x) = 1, d softmax(x) = 0 (a constant 1).
      const auto w = braid::Tensor::full(context(), dev.index, BRAID_FLOAT32, {}, 2.5);
      braid::attach_grad(w);
      braid::Tensor y;
      {
        braid::AutogradScope record(context());
        y = braid::sum(w, {0}) + braid::sum(braid::softmax(w, 0), {-1});
      }
      braid::backward(y);
      CHECK(braid::grad(w).to_vector<float>() == std::vector<float>{1.0f});
    });
  }
}

// A tensor without elements may still have huge dimensions: its strides are never used, so a device
// whose kernels index with 32 bits (Vulkan) reduces it to the identity too (it failed after the call).
TEST_CASE("reduce: an empty tensor with a dimension past 2^31 sums to 0 on every device") {
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const int64_t big = int64_t{1} << 33;
      const auto x = braid::Tensor::empty(harness::context(), dev.index, BRAID_FLOAT32, {0, big});
      const auto s = braid::sum(x, {}, true);
      CHECK_CLOSE(harness::download(s), ref::Array({1, 1}, 0.0), 0.0);
      const auto n = braid::neg(x);
      CHECK(n.shape() == std::vector<int64_t>{0, big});
      harness::context().wait_all();  // nothing failed after the calls either
    });
}
