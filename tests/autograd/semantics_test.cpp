// Autograd semantics: overwrite vs accumulate, no-grad sections, head gradients, several heads,
// retain_graph, per-thread recording, and clear errors for bad input.
#include <cmath>
#include <thread>

#include "ops/harness.h"

using braid::Tensor;

namespace {
Tensor vec64(braid::Device d, std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(harness::context(), d, {n}, v);
}
std::vector<double> values64(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("autograd: WRITE overwrites and ADD accumulates across backwards") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor w = vec64(dev.index, {1, 2, 3}), a = vec64(dev.index, {1, 2, 3});
    braid::attach_grad(w, BRAID_GRAD_WRITE);
    braid::attach_grad(a, BRAID_GRAD_ADD);
    for (int step = 1; step <= 3; ++step) {
      Tensor y;
      {
        braid::AutogradScope rec(ctx);
        y = braid::sum(braid::mul(braid::square(w), a));  // dy/dw = 2 w a, dy/da = w^2
      }
      braid::backward(y);
      CHECK(values64(braid::grad(w)) == std::vector<double>{2, 8, 18});
      CHECK(values64(braid::grad(a)) == std::vector<double>{1.0 * step, 4.0 * step, 9.0 * step});
    }
    // Re-attaching keeps the buffer; NULL detaches it.
    braid::attach_grad(a, BRAID_GRAD_WRITE);
    CHECK(values64(braid::grad(a)) == std::vector<double>{3, 12, 27});
    braid::attach_grad(a, BRAID_GRAD_NULL);
    braid_tensor g = nullptr;
    CHECK(braid_tensor_grad(a.get(), &g) == BRAID_ERR_INVALID_STATE);
    CHECK(g == nullptr);
  }
}

TEST_CASE("autograd: a gradient used twice adds up (fan-out)") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec64(dev.index, {1, -2});
    braid::attach_grad(x);
    Tensor y;
    {
      braid::AutogradScope rec(ctx);
      y = braid::sum(braid::add(braid::mul(x, x), (x * 3.0)));  // 2x + 3
    }
    braid::backward(y);
    CHECK(values64(braid::grad(x)) == std::vector<double>{5, -1});
  }
}

TEST_CASE("autograd: an operand promoted to another dtype gets its gradient in its own dtype") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor w = Tensor::from_vector(ctx, dev.index, {3}, std::vector<float>{1, 2, 3});
    const Tensor c = vec64(dev.index, {0.5, -2, 4});  // float64: w is promoted to float64
    braid::attach_grad(w);
    Tensor y;
    {
      braid::AutogradScope rec(ctx);
      y = braid::sum(braid::mul(w, c));
    }
    CHECK(y.dtype() == BRAID_FLOAT64);
    braid::backward(y);
    const Tensor g = braid::grad(w);
    REQUIRE(g.dtype() == BRAID_FLOAT32);
    CHECK(g.to_vector<float>() == std::vector<float>{0.5f, -2.0f, 4.0f});
  }
}

TEST_CASE("autograd: no-grad sections are not recorded, and recording is per thread") {
  auto& ctx = harness::context();
  const auto dev = harness::each_device().at(0);
  Tensor x = vec64(dev.index, {1, 2});
  braid::attach_grad(x);
  CHECK_FALSE(braid::is_recording(ctx));
  Tensor y, c;
  {
    braid::AutogradScope rec(ctx);
    CHECK(braid::is_recording(ctx));
    {
      braid::AutogradScope no_grad(ctx, false);
      CHECK_FALSE(braid::is_recording(ctx));
      c = (x * 10.0);  // a constant: no gradient flows through it
    }
    CHECK(braid::is_recording(ctx));
    bool other_thread_records = true;
    std::thread([&] { other_thread_records = braid::is_recording(ctx); }).join();
    CHECK_FALSE(other_thread_records);
    y = braid::sum(braid::mul(x, c));
  }
  CHECK_FALSE(braid::is_recording(ctx));
  braid::backward(y);
  CHECK(values64(braid::grad(x)) == std::vector<double>{10, 20});
  // c was computed without recording: it does not require a gradient.
  braid_tensor hc = c.get();
  CHECK(braid_backward(1, &hc, nullptr, 0) == BRAID_ERR_INVALID_STATE);
  int32_t prev = -1;
  REQUIRE(braid_autograd_set_recording(ctx.get(), 1, &prev) == BRAID_OK);
  CHECK(prev == 0);
  REQUIRE(braid_autograd_set_recording(ctx.get(), 0, &prev) == BRAID_OK);
  CHECK(prev == 1);
}

// A thread that ends while recording takes its switch with it: a new thread (which the system may
// give the ended one's id) starts with recording off, as the header promises.
TEST_CASE("autograd: a thread that ends while recording passes nothing to the threads after it") {
  auto& ctx = harness::context();
  const auto dev = harness::each_device().at(0);
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    std::thread([&] { REQUIRE(braid_autograd_set_recording(ctx.get(), 1, nullptr) == BRAID_OK); }).join();
    bool records = true;
    braid_status backward_status = BRAID_OK;
    std::thread([&] {
      records = braid::is_recording(ctx);
      Tensor w = vec64(dev.index, {1, 2});
      braid::attach_grad(w);
      Tensor s = braid::sum(w * 2.0);  // not recorded: backward from it is refused
      braid_tensor h = s.get();
      backward_status = braid_backward(1, &h, nullptr, 0);
    }).join();
    CHECK_FALSE(records);
    CHECK(backward_status == BRAID_ERR_INVALID_STATE);
  }
  CHECK_FALSE(braid::is_recording(ctx));
}

TEST_CASE("autograd: head gradients, several heads, non-scalar heads") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec64(dev.index, {1, 2, 3});
    braid::attach_grad(x);
    Tensor y1, y2;
    {
      braid::AutogradScope rec(ctx);
      y1 = (x * 2.0);                     // vector head
      y2 = braid::sum(braid::square(x));  // scalar head
    }
    // A non-scalar head needs a head gradient.
    braid_tensor hs[2] = {y1.get(), y2.get()};
    CHECK(braid_backward(1, hs, nullptr, 1) == BRAID_ERR_SHAPE);
    Tensor hg = vec64(dev.index, {1, 10, 100});
    braid_tensor gs[2] = {hg.get(), nullptr};  // NULL entry: the scalar head gets 1
    REQUIRE(braid_backward(2, hs, gs, 0) == BRAID_OK);
    CHECK(values64(braid::grad(x)) == std::vector<double>{2 + 2, 20 + 4, 200 + 6});
  }
}

TEST_CASE("autograd: backward twice needs retain_graph") {
  auto& ctx = harness::context();
  const auto dev = harness::each_device().at(0);
  Tensor x = vec64(dev.index, {1, 2});
  braid::attach_grad(x, BRAID_GRAD_ADD);
  Tensor y;
  {
    braid::AutogradScope rec(ctx);
    y = braid::sum(braid::exp(x));
  }
  braid::backward(y, {}, true);
  braid::backward(y, {}, false);  // the graph was retained once
  const auto g = values64(braid::grad(x));
  CHECK(g[0] == doctest::Approx(2 * std::exp(1.0)));
  CHECK(g[1] == doctest::Approx(2 * std::exp(2.0)));
  braid_tensor h = y.get();
  CHECK(braid_backward(1, &h, nullptr, 0) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("freed") != std::string::npos);
}

TEST_CASE("autograd: errors for bad input") {
  auto& ctx = harness::context();
  const auto dev = harness::each_device().at(0);
  Tensor x = vec64(dev.index, {1, 2});
  Tensor labels = Tensor::from_vector(ctx, dev.index, {2}, std::vector<int32_t>{0, 1});
  CHECK(braid_tensor_attach_grad(nullptr, BRAID_GRAD_WRITE) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_tensor_attach_grad(x.get(), static_cast<braid_grad_req>(7)) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_tensor_attach_grad(labels.get(), BRAID_GRAD_WRITE) == BRAID_ERR_DTYPE);
  braid_tensor g = nullptr;
  CHECK(braid_tensor_grad(x.get(), &g) == BRAID_ERR_INVALID_STATE);  // none attached
  CHECK(braid_tensor_grad(x.get(), nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_autograd_set_recording(nullptr, 1, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_autograd_is_recording(ctx.get(), nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_backward(0, nullptr, nullptr, 0) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_backward(1, nullptr, nullptr, 0) == BRAID_ERR_INVALID_ARGUMENT);
  braid_tensor null_head = nullptr;
  CHECK(braid_backward(1, &null_head, nullptr, 0) == BRAID_ERR_INVALID_ARGUMENT);
  braid_tensor hx = x.get();
  CHECK(braid_backward(1, &hx, nullptr, 0) == BRAID_ERR_INVALID_STATE);  // nothing recorded
  braid::attach_grad(x);
  Tensor y;
  {
    braid::AutogradScope rec(ctx);
    y = (x * 3.0);
  }
  braid_tensor hy = y.get();
  Tensor wrong_shape = vec64(dev.index, {1, 2, 3});
  braid_tensor hw = wrong_shape.get();
  CHECK(braid_backward(1, &hy, &hw, 1) == BRAID_ERR_SHAPE);
  Tensor wrong_dtype = braid::cast(vec64(dev.index, {1, 2}), BRAID_FLOAT32);
  braid_tensor hd = wrong_dtype.get();
  CHECK(braid_backward(1, &hy, &hd, 1) == BRAID_ERR_DTYPE);
  // A leaf as its own head: the gradient is the head gradient.
  Tensor ones = vec64(dev.index, {1, 1});
  braid_tensor ho = ones.get();
  REQUIRE(braid_backward(1, &hx, &ho, 0) == BRAID_OK);
}
