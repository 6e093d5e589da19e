// Automatic mixed precision (braid_autocast_set, ABI 1.13) on every device: matmul and conv2d given
// float32 operands compute on them rounded to bfloat16 or float16, in float32, and return float32; their
// gradients are rounded the same way; everything else, float64, other threads and the setting off are
// untouched; a hybrid function keeps a graph per setting.
#include <algorithm>
#include <string>
#include <thread>

#include "harness.h"

namespace {

// a and b rounded to dtype, then multiplied in double: what autocast's float32 product must match to
// float32's rounding of a sum of k terms.
ref::Array rounded_matmul(const ref::Array& a, const ref::Array& b, braid_dtype dtype) {
  return ref::matmul(ref::round_to(dtype, a), ref::round_to(dtype, b), false, false);
}

double max_abs_diff(const ref::Array& x, const ref::Array& y) {
  double m = 0;
  for (size_t i = 0; i < x.data.size(); ++i) m = std::max(m, std::abs(x.data[i] - y.data[i]));
  return m;
}

}  // namespace

TEST_CASE("amp: matmul and conv2d round float32 operands to the autocast dtype and return float32") {
  auto& ctx = harness::context();
  // Values with more bits than bfloat16 or float16 keep, so that the rounding shows.
  const ref::Array a = harness::random_array({6, 40}, -1, 1, BRAID_FLOAT32, 21);
  const ref::Array b = harness::random_array({40, 5}, -1, 1, BRAID_FLOAT32, 22);
  const ref::Array x = harness::random_array({2, 3, 6, 6}, -1, 1, BRAID_FLOAT32, 23);
  const ref::Array w = harness::random_array({4, 3, 3, 3}, -1, 1, BRAID_FLOAT32, 24);
  const ref::Array bias = harness::random_array({4}, -1, 1, BRAID_FLOAT32, 25);
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      const auto ta = harness::upload(dev.index, BRAID_FLOAT32, a), tb = harness::upload(dev.index, BRAID_FLOAT32, b);
      const auto tx = harness::upload(dev.index, BRAID_FLOAT32, x), tw = harness::upload(dev.index, BRAID_FLOAT32, w);
      const auto tbias = harness::upload(dev.index, BRAID_FLOAT32, bias);
      const ref::Array full = harness::download(braid::matmul(ta, tb));
      for (braid_dtype low : {BRAID_BFLOAT16, BRAID_FLOAT16}) {
        INFO("device ", dev.id, ", autocast ", harness::dtype_name(low));
        braid::Tensor y, c;
        {
          const braid::Autocast amp(ctx, low);
          y = braid::matmul(ta, tb);
          c = braid::conv2d(tx, tw, tbias, {{1, 1}, {1, 1}});
        }
        CHECK(y.dtype() == BRAID_FLOAT32);
        CHECK(c.dtype() == BRAID_FLOAT32);
        CHECK_CLOSE(harness::download(y), rounded_matmul(a, b, low), 1e-5);
        CHECK(max_abs_diff(harness::download(y), full) > 1e-5);  // the rounding is there
        const ref::Array conv_want =
            ref::conv2d(ref::round_to(low, x), ref::round_to(low, w), &bias, {1, 1}, {1, 1});  // bias in float32
        CHECK_CLOSE(harness::download(c), conv_want, 1e-5);
      }
      // Off again, and float64 operands under autocast: exactly the full-precision results.
      CHECK_CLOSE(harness::download(braid::matmul(ta, tb)), full, 0.0);
      if ((harness::context().device_info(dev.index).dtype_mask & (1u << BRAID_FLOAT64)) != 0) {
        const auto da = harness::upload(dev.index, BRAID_FLOAT64, a), db = harness::upload(dev.index, BRAID_FLOAT64, b);
        const braid::Autocast amp(ctx, BRAID_BFLOAT16);
        CHECK_CLOSE(harness::download(braid::matmul(da, db)), ref::matmul(a, b, false, false), 1e-12);
      }
    });
  }
}

TEST_CASE("amp: large, transposed and batched products (split over the cores where the backend splits them)") {
  auto& ctx = harness::context();
  const ref::Array a = harness::random_array({300, 100}, -1, 1, BRAID_FLOAT32, 51);
  const ref::Array b = harness::random_array({100, 257}, -1, 1, BRAID_FLOAT32, 52);
  const ref::Array batch = harness::random_array({3, 40, 100}, -1, 1, BRAID_FLOAT32, 53);
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto ta = harness::upload(dev.index, BRAID_FLOAT32, a), tb = harness::upload(dev.index, BRAID_FLOAT32, b);
      const auto tbatch = harness::upload(dev.index, BRAID_FLOAT32, batch);
      const braid::Autocast amp(ctx, BRAID_BFLOAT16);
      const ref::Array ra = ref::round_to(BRAID_BFLOAT16, a), rb = ref::round_to(BRAID_BFLOAT16, b);
      CHECK_CLOSE(harness::download(braid::matmul(ta, tb)), ref::matmul(ra, rb, false, false), 1e-5);
      CHECK_CLOSE(harness::download(braid::matmul(tb, ta, true, true)), ref::matmul(rb, ra, true, true), 1e-5);
      // [3, 40, 100] @ [100, 257]: the 2-D operand shared by every batch
      const ref::Array got = harness::download(braid::matmul(tbatch, tb));
      const ref::Array rbatch = ref::round_to(BRAID_BFLOAT16, batch);
      for (int64_t i = 0; i < 3; ++i) {
        INFO("batch ", i);
        ref::Array one({40, 100});
        std::copy(rbatch.data.begin() + i * 4000, rbatch.data.begin() + (i + 1) * 4000, one.data.begin());
        ref::Array part({40, 257});
        std::copy(got.data.begin() + i * 40 * 257, got.data.begin() + (i + 1) * 40 * 257, part.data.begin());
        CHECK_CLOSE(part, ref::matmul(one, rb, false, false), 1e-5);
      }
    });
  }
}

TEST_CASE("amp: gradients through an autocast matmul are rounded like its operands") {
  auto& ctx = harness::context();
  const ref::Array a = harness::random_array({3, 8}, -1, 1, BRAID_FLOAT32, 31);
  const ref::Array b = harness::random_array({8, 2}, -1, 1, BRAID_FLOAT32, 32);
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto ta = harness::upload(dev.index, BRAID_FLOAT32, a), tb = harness::upload(dev.index, BRAID_FLOAT32, b);
      braid::attach_grad(ta);
      braid::attach_grad(tb);
      {
        const braid::AutogradScope record(ctx);
        const braid::Autocast amp(ctx, BRAID_BFLOAT16);
        braid::backward(braid::sum(braid::matmul(ta, tb)));
      }
      // d sum(A B) / dA = 1 B^T with B rounded, then the gradient rounded to bfloat16: within
      // bfloat16's precision of the float32 gradient, and on bfloat16's grid.
      const ref::Array ga = harness::download(braid::grad(ta));
      const ref::Array want = ref::matmul(ref::full({3, 2}, 1.0), ref::round_to(BRAID_BFLOAT16, b), false, true);
      CHECK_CLOSE(ga, ref::round_to(BRAID_BFLOAT16, want), 0.0);
      CHECK_CLOSE(harness::download(braid::grad(tb)),
                  ref::round_to(BRAID_BFLOAT16,
                                ref::matmul(ref::round_to(BRAID_BFLOAT16, a), ref::full({3, 2}, 1.0), true, false)),
                  0.0);
    });
  }
}

TEST_CASE("amp: the setting is per thread and per context; bad dtypes are refused") {
  auto& ctx = harness::context();
  braid_dtype prev = BRAID_INT32, now = BRAID_INT32;
  REQUIRE(braid_autocast_set(ctx.get(), BRAID_BFLOAT16, &prev) == BRAID_OK);
  CHECK(prev == BRAID_FLOAT32);
  std::thread([&] {
    braid_dtype there = BRAID_INT32;
    CHECK(braid_autocast_get(ctx.get(), &there) == BRAID_OK);
    CHECK(there == BRAID_FLOAT32);  // another thread: off
  }).join();
  braid::Context other;
  CHECK(braid_autocast_get(other.get(), &now) == BRAID_OK);
  CHECK(now == BRAID_FLOAT32);  // another context: off
  CHECK(braid_autocast_set(ctx.get(), BRAID_INT32, &prev) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_autocast_set(ctx.get(), static_cast<braid_dtype>(99), nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_autocast_get(ctx.get(), nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_autocast_set(nullptr, BRAID_FLOAT32, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  REQUIRE(braid_autocast_set(ctx.get(), BRAID_FLOAT32, &prev) == BRAID_OK);
  CHECK(prev == BRAID_BFLOAT16);
  CHECK(braid_autocast_get(ctx.get(), &now) == BRAID_OK);
  CHECK(now == BRAID_FLOAT32);
}

namespace {
braid_status product(void*, int32_t, const braid_tensor* inputs, int32_t, braid_tensor* outputs) {
  return braid_matmul(inputs[0], inputs[1], 0, 0, &outputs[0]);
}
}  // namespace

TEST_CASE("amp: a hybrid function keeps a graph per autocast setting") {
  auto& ctx = harness::context();
  const ref::Array a = harness::random_array({4, 16}, -1, 1, BRAID_FLOAT32, 41);
  const ref::Array b = harness::random_array({16, 3}, -1, 1, BRAID_FLOAT32, 42);
  const auto ta = harness::upload(0, BRAID_FLOAT32, a), tb = harness::upload(0, BRAID_FLOAT32, b);
  braid_hybrid h = nullptr;
  REQUIRE(braid_hybrid_create(ctx.get(), product, nullptr, 2, 1, BRAID_GRAPH_PASS_ALL, &h) == BRAID_OK);
  const braid_tensor in[2] = {ta.get(), tb.get()};
  const auto call = [&] {
    braid_tensor y = nullptr;
    REQUIRE(braid_hybrid_call(h, in, &y) == BRAID_OK);
    return harness::download(braid::Tensor::adopt(y));
  };
  for (int round = 0; round < 2; ++round) {
    INFO("round ", round);
    CHECK_CLOSE(call(), ref::matmul(a, b, false, false), 1e-5);
    {
      const braid::Autocast amp(ctx, BRAID_BFLOAT16);
      CHECK_CLOSE(call(), rounded_matmul(a, b, BRAID_BFLOAT16), 1e-5);
    }
  }
  braid_hybrid_release(h);
}
