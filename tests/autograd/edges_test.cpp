// Gradients where the formula meets 0 * inf, valued as PyTorch 1.13 does (norm and pow at zero), and
// gradients through casts to the 16-bit storage types and back.
#include <cmath>

#include "ops/harness.h"

using braid::Tensor;

namespace {
// A leaf of dtype with these values and an attached gradient.
Tensor leaf(braid::Device d, braid_dtype dtype, std::vector<int64_t> shape, std::vector<double> v) {
  Tensor t = braid::cast(Tensor::from_vector(harness::context(), d, shape, v), dtype);
  braid::attach_grad(t);
  return t;
}
std::vector<double> grad_of(const Tensor& t) { return braid::cast(braid::grad(t), BRAID_FLOAT64).to_vector<double>(); }
void check_values(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": ", got[i], ", want ", want[i]);
    if (std::isinf(want[i]))
      CHECK(got[i] == want[i]);
    else
      CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}
}  // namespace

TEST_CASE("gradients: norm at zero is 0, not NaN (as PyTorch)") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        Tensor x = leaf(dev.index, dt, {3}, {0, 0, 0});
        Tensor n;
        {
          braid::AutogradScope rec(ctx);
          n = braid::norm(x);
        }
        braid::backward(n);
        check_values(grad_of(x), {0, 0, 0}, 0);
        // Per row: a zero row gets 0, the others x / ||x||.
        Tensor m = leaf(dev.index, dt, {2, 2}, {0, 0, 3, 4});
        Tensor s;
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::norm(m, {1}));
        }
        braid::backward(s);
        check_values(grad_of(m), {0, 0, 0.6, 0.8}, 1e-6);
      }
    });
}

TEST_CASE("gradients: pow at base 0 is masked as PyTorch") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        // Tensor ** tensor: d/dx is 0 where y == 0; d/dy is 0 where x == 0 and y >= 0.
        Tensor x = leaf(dev.index, dt, {4}, {0, 0, 2, 0});
        Tensor y = leaf(dev.index, dt, {4}, {0, 2, 3, -1});
        Tensor p;
        {
          braid::AutogradScope rec(ctx);
          p = braid::sum(braid::pow(x, y));
        }
        braid::backward(p);
        check_values(grad_of(x), {0, 0, 12, -INFINITY}, 1e-6);
        check_values(grad_of(y), {0, 0, 8 * std::log(2.0), -INFINITY}, 1e-6);
        // x ** 0: 0 everywhere (PyTorch returns zeros for a zero exponent).
        Tensor a = leaf(dev.index, dt, {2}, {0, 1});
        Tensor q;
        {
          braid::AutogradScope rec(ctx);
          q = braid::sum(braid::pow(a, 0.0));
        }
        braid::backward(q);
        check_values(grad_of(a), {0, 0}, 0);
        // 0 ** e: 0 where e >= 0, -inf where e < 0 (0^e = inf times log 0).
        Tensor e = leaf(dev.index, dt, {3}, {0, 2, -1});
        Tensor r;
        {
          braid::AutogradScope rec(ctx);
          r = braid::sum(braid::binary(BRAID_BINARY_POW, e, 0.0, true));
        }
        braid::backward(r);
        check_values(grad_of(e), {0, 0, -INFINITY}, 0);
        // 2 ** e, unchanged: 2^e ln 2.
        Tensor f = leaf(dev.index, dt, {2}, {0, 3});
        Tensor u;
        {
          braid::AutogradScope rec(ctx);
          u = braid::sum(braid::binary(BRAID_BINARY_POW, f, 2.0, true));
        }
        braid::backward(u);
        check_values(grad_of(f), {std::log(2.0), 8 * std::log(2.0)}, 1e-6);
      }
    });
}

TEST_CASE("gradients: through casts to float16 and bfloat16 and back") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype half : {BRAID_FLOAT16, BRAID_BFLOAT16}) {
        INFO("device ", dev.id, " via ", harness::dtype_name(half));
        Tensor x = leaf(dev.index, BRAID_FLOAT32, {2}, {1.5, 2.5});
        Tensor s;
        {
          braid::AutogradScope rec(ctx);
          Tensor h = braid::cast(x, half);
          Tensor back = braid::cast(braid::reshape(h, {2, 1}), BRAID_FLOAT32);  // a reshape of the half value
          Tensor again = braid::cast(h, BRAID_FLOAT32);                         // h read twice: gradients add
          s = braid::sum(braid::mul(braid::reshape(back, {2}), again));         // sum(x^2) through half
        }
        braid::backward(s);
        check_values(grad_of(x), {3, 5}, 0);  // 2x, exact in both formats
        // The head itself in half: its gradient of ones is made in float32 and cast.
        Tensor hh;
        {
          braid::AutogradScope rec(ctx);
          hh = braid::cast(braid::sum(x * 2.0), half);
        }
        braid::backward(hh);
        check_values(grad_of(x), {2, 2}, 0);
      }
    });
}
