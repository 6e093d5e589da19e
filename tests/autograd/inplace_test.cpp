// Values a gradient reads, changed in place between forward and backward: backward refuses (version
// counters, as PyTorch's "modified by an inplace operation") instead of computing a wrong gradient, and
// only those values count: an update the gradient does not read, or one after backward, is fine.
#include <cmath>
#include <span>
#include <string>

#include "ops/harness.h"

using braid::Tensor;

namespace {
Tensor vec(braid::Device d, std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(harness::context(), d, {n}, v);
}
std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

// backward on head must fail with BRAID_ERR_INVALID_STATE naming op; the leaf's gradient stays as it was.
void check_refused(const Tensor& head, const char* op, const Tensor& leaf, const std::vector<float>& grad_before) {
  braid_tensor h = head.get();
  CHECK(braid_backward(1, &h, nullptr, 0) == BRAID_ERR_INVALID_STATE);
  const std::string msg = braid_last_error();
  CHECK(msg.find("modified in place") != std::string::npos);
  CHECK(msg.find(op) != std::string::npos);
  CHECK(values(braid::grad(leaf)) == grad_before);
}
}  // namespace

TEST_CASE("autograd: a saved intermediate overwritten before backward is refused") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec(dev.index, {1, 2});
    braid::attach_grad(x);
    Tensor y, z;
    {
      braid::AutogradScope rec(ctx);
      y = braid::exp(x);
      z = braid::sum(y * y);  // mul reads y, and exp's gradient reads y too
    }
    y.write(std::vector<float>{100, 100});  // was a gradient of [20000, 20000]
    check_refused(z, "mul", x, {0, 0});
    // copy_into, like write_host, is a new version of y.
    Tensor y2, z2;
    {
      braid::AutogradScope rec(ctx);
      y2 = braid::exp(x);
      z2 = braid::sum(braid::square(y2));
    }
    braid::copy_into(vec(dev.index, {3, 4}), y2);
    check_refused(z2, "square", x, {0, 0});
  }
}

TEST_CASE("autograd: a leaf updated by an optimizer before backward is refused") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor w = vec(dev.index, {1, 2});
    braid::attach_grad(w);
    Tensor s;
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(braid::square(w));
    }
    braid::sgd_update(w, vec(dev.index, {10, 10}), 0.1);  // w -> [0, 1]: was a gradient of [0, 2]
    check_refused(s, "square", w, {0, 0});
    // A value that the gradient reads through a reshape (same storage) counts too.
    Tensor s2;
    {
      braid::AutogradScope rec(ctx);
      s2 = braid::sum(braid::square(braid::reshape(w, {2, 1})));
    }
    Tensor r = braid::reshape(w, {1, 2});
    braid::sgd_update(r, Tensor::from_vector(ctx, dev.index, {1, 2}, std::vector<float>{1, 1}), 0.5);
    check_refused(s2, "square", w, {0, 0});
  }
}

TEST_CASE("autograd: updates the gradient does not read, or after backward, are fine") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor w = vec(dev.index, {1, 2}), c = vec(dev.index, {5, 7});
    braid::attach_grad(w);
    Tensor s;
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(braid::add(w * 3.0, c));  // neither op reads w or c in its gradient
    }
    braid::sgd_update(w, vec(dev.index, {1, 1}), 0.5);
    c.write(std::vector<float>{0, 0});
    braid::backward(s);
    CHECK(values(braid::grad(w)) == std::vector<float>{3, 3});
    // A training loop: forward, backward, update in place, again. Each forward reads the new w.
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> before = values(w);
      Tensor loss;
      {
        braid::AutogradScope rec(ctx);
        loss = braid::sum(braid::square(w));
      }
      braid::backward(loss);
      const std::vector<float> g = values(braid::grad(w));
      CHECK(g == std::vector<float>{2 * before[0], 2 * before[1]});
      braid::sgd_update(w, braid::grad(w), 0.25);
    }
  }
}

TEST_CASE("autograd: a reused storage keeps counting versions") {
  // Outputs of 256 KiB and more take over storages the application released (tensor.cpp,
  // new_output_tensor), including ones written in place: the new tensor's version goes on from there,
  // and a node that saved it compares against that version, so backward is neither refused wrongly
  // nor fooled.
  auto& ctx = harness::context();
  const auto dev = harness::each_device().at(0);
  const int64_t n = 1 << 17;  // 512 KiB of float32
  Tensor x = Tensor::full(ctx, dev.index, BRAID_FLOAT32, {n}, 0.5);
  braid::attach_grad(x);
  for (int round = 0; round < 4; ++round) {
    INFO("round ", round);
    Tensor y, s;
    {
      braid::AutogradScope rec(ctx);
      y = braid::exp(x);
      s = braid::sum(y);
    }
    y.write(std::vector<float>(static_cast<size_t>(n), 1.0f));  // a new version of y's storage
    braid_tensor h = s.get();
    CHECK(braid_backward(1, &h, nullptr, 0) == BRAID_ERR_INVALID_STATE);
    y = Tensor();  // released, written: offered for reuse
    s = Tensor();
    Tensor y2, s2;
    {
      braid::AutogradScope rec(ctx);
      y2 = braid::exp(x);  // may take over y's storage, at its version
      s2 = braid::sum(y2);
    }
    braid::backward(s2);
    const std::vector<float> g = values(braid::grad(x));
    CHECK(g.front() == doctest::Approx(std::exp(0.5)));
    CHECK(g.back() == doctest::Approx(std::exp(0.5)));
  }
}

// A tensor written whole by copy_into or write_host holds a value without history from then on (a
// constant to ops recorded after), while ops recorded before the write keep the history of the value
// they read, as PyTorch's graph keeps the value an op saw. Before, the write cleared the tensor's
// history for everyone (an earlier reader's gradient was lost: [0, 0] for [3, 3]), and write_host kept
// it for later readers (a gradient through the old producer: [9, 11] for [7, 7]).
TEST_CASE("autograd: ops recorded before a value is overwritten keep its history; later ones see none") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec(dev.index, {1, 2});
    braid::attach_grad(x);
    Tensor y, s, t;
    {
      braid::AutogradScope rec(ctx);
      y = x * 3.0;
      s = braid::sum(y + 1.0);  // neither gradient reads y
    }
    braid::copy_into(vec(dev.index, {5, 5}), y);
    {
      braid::AutogradScope rec(ctx);
      t = braid::sum(y * x);  // y is a constant now
    }
    braid::backward(s);
    CHECK(values(braid::grad(x)) == std::vector<float>{3, 3});
    braid::backward(t);
    CHECK(values(braid::grad(x)) == std::vector<float>{5, 5});

    Tensor y2, s2, t2;
    {
      braid::AutogradScope rec(ctx);
      y2 = x * 2.0;
      s2 = braid::sum(y2 + 1.0);
    }
    y2.write(std::vector<float>{7, 7});
    {
      braid::AutogradScope rec(ctx);
      t2 = braid::sum(y2 * x);
    }
    braid::backward(s2);
    CHECK(values(braid::grad(x)) == std::vector<float>{2, 2});
    braid::backward(t2);
    CHECK(values(braid::grad(x)) == std::vector<float>{7, 7});
  }
}

// Written through another handle over the same memory (a reshape), the tensor's own history no
// longer made its value: an op that reads it afterwards must not pass a gradient into that history
// (it gave [6, 6] where the value is a constant). Refused before anything is computed.
TEST_CASE("autograd: a value overwritten through another handle before an op read it is refused") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec(dev.index, {1, 2});
    braid::attach_grad(x);
    Tensor y, s;
    {
      braid::AutogradScope rec(ctx);
      y = x * 3.0;
    }
    braid::copy_into(Tensor::from_vector(ctx, dev.index, {2, 1}, std::vector<float>{4, 4}), braid::reshape(y, {2, 1}));
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(y * 2.0);
    }
    braid_tensor h = s.get();
    CHECK(braid_backward(1, &h, nullptr, 0) == BRAID_ERR_INVALID_STATE);
    CHECK(std::string(braid_last_error()).find("was overwritten") != std::string::npos);
    CHECK(values(braid::grad(x)) == std::vector<float>{0, 0});
    // What it read is still right in the forward direction.
    CHECK(values(s) == std::vector<float>{16});
  }
}

// concat writes its result part by part; a part that needs no gradient (a constant, an integer) is
// not recorded, yet it is a write after the recorded parts. It must not make the result look
// overwritten (backward refused it when that part came last, imperative or hybridized).
TEST_CASE("autograd: concat with parts that need no gradient, in any order, imperative and hybridized") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec(dev.index, {1, 2}), c = vec(dev.index, {5, 6});
    braid::attach_grad(x);
    for (int order = 0; order < 3; ++order) {
      INFO("order ", order);
      Tensor s;
      {
        braid::AutogradScope rec(ctx);
        Tensor y = x * 3.0;
        Tensor joined = order == 0   ? braid::concat({y, c}, 0)
                        : order == 1 ? braid::concat({c, y}, 0)
                                     : braid::concat({y, braid::cast(c, BRAID_INT32)}, 0);  // promoted
        s = braid::sum(joined * 2.0);
      }
      braid::backward(s);
      CHECK(values(braid::grad(x)) == std::vector<float>{6, 6});
    }
    braid::Hybrid h(ctx, 1, 1, [&](std::span<const Tensor> in) {
      return std::vector<Tensor>{braid::concat({in[0] * 3.0, c}, 0) * 2.0};
    });
    for (int call = 0; call < 2; ++call) {
      INFO("hybrid call ", call);
      Tensor s;
      {
        braid::AutogradScope rec(ctx);
        s = braid::sum(h({x})[0]);
      }
      braid::backward(s);
      CHECK(values(braid::grad(x)) == std::vector<float>{6, 6});
    }
  }
}

// A head overwritten through another handle is refused like any reader of it ([3, 3] for a constant).
TEST_CASE("autograd: a head overwritten through another handle is refused") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor x = vec(dev.index, {1, 2});
    braid::attach_grad(x);
    Tensor y;
    {
      braid::AutogradScope rec(ctx);
      y = x * 3.0;
    }
    braid::copy_into(Tensor::from_vector(ctx, dev.index, {2, 1}, std::vector<float>{4, 4}), braid::reshape(y, {2, 1}));
    const Tensor ones = vec(dev.index, {1, 1});
    braid_tensor h = y.get(), g = ones.get();
    CHECK(braid_backward(1, &h, &g, 0) == BRAID_ERR_INVALID_STATE);
    CHECK(std::string(braid_last_error()).find("was overwritten") != std::string::npos);
    CHECK(values(braid::grad(x)) == std::vector<float>{0, 0});
  }
}

// A reshape of a leaf parameter is another name for the leaf's memory: kept across an optimizer's
// in-place update (and across a backward without retain_graph), it reads the updated values and its
// gradient reaches the leaf, as a view of a parameter in PyTorch. A copy into it keeps the link too.
TEST_CASE("autograd: a reshape of a leaf kept across an update and a backward still leads to the leaf") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor w = Tensor::from_vector(ctx, dev.index, {2, 2}, std::vector<float>{1, 2, 3, 4});
    braid::attach_grad(w);
    Tensor v, s;
    {
      braid::AutogradScope rec(ctx);
      v = braid::reshape(w, {4});
      s = braid::sum(v * v);
    }
    braid::backward(s);  // without retain_graph
    CHECK(values(braid::grad(w)) == std::vector<float>{2, 4, 6, 8});
    braid::sgd_update(w, braid::grad(w), 0.25);  // w = [0.5, 1, 1.5, 2]
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(v * 3.0);
    }
    braid::backward(s);
    CHECK(values(s) == std::vector<float>{15});
    CHECK(values(braid::grad(w)) == std::vector<float>{3, 3, 3, 3});
    braid::copy_into(vec(dev.index, {1, 1, 1, 1}), v);  // into the alias: w is [1, 1, 1, 1]
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(v * v);
    }
    braid::backward(s);
    CHECK(values(s) == std::vector<float>{4});
    CHECK(values(braid::grad(w)) == std::vector<float>{2, 2, 2, 2});
  }
}

// A parameter trained, then frozen (attach_grad NULL), used through a reshape made while it trained:
// the view is a constant now, not an overwritten value; the other parameters still get gradients.
TEST_CASE("autograd: a reshape of a parameter frozen after an update is a constant, not stale") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    Tensor a = vec(dev.index, {1, 2, 3, 4}), b = vec(dev.index, {1, 1, 2, 2});
    braid::attach_grad(a);
    braid::attach_grad(b);
    Tensor bv, s;
    {
      braid::AutogradScope rec(ctx);
      bv = braid::reshape(b, {2, 2});
      s = braid::sum(braid::reshape(a, {2, 2}) * bv);
    }
    braid::backward(s);
    braid::sgd_update(b, braid::grad(b), 0.5);  // b = [0.5, 0, 0.5, 0]
    REQUIRE(braid_tensor_attach_grad(b.get(), BRAID_GRAD_NULL) == BRAID_OK);
    {
      braid::AutogradScope rec(ctx);
      s = braid::sum(braid::reshape(a, {2, 2}) * bv);
    }
    braid::backward(s);
    CHECK(values(braid::grad(a)) == std::vector<float>{0.5, 0, 0.5, 0});
  }
}
