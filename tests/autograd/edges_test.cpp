// Gradients where the formula meets 0 * inf, valued as PyTorch 1.13 does (norm and pow at zero, masked
// gradients meeting an infinite or NaN upstream gradient, NaN operands), gradients through casts to the
// 16-bit storage types and back, where's gradient, and attach_grad on a value with a history.
#include <cmath>
#include <limits>

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
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i]))
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
        // A norm so small it is subnormal (the CPU accumulates in float64) or 0 (its squares underflow):
        // x / ||x|| or 0, never g / ||x|| overflowing (it gave [inf, nan] for [1e-40, 0] in float32).
        const double tiny = dt == BRAID_FLOAT32 ? 1e-40 : 1e-310;
        Tensor t = leaf(dev.index, dt, {2}, {tiny, 0});
        Tensor tn;
        {
          braid::AutogradScope rec(ctx);
          tn = braid::norm(t);
        }
        braid::backward(tn);
        const double norm = braid::cast(tn, BRAID_FLOAT64).to_vector<double>()[0];
        check_values(grad_of(t), norm > 0 ? std::vector<double>{1, 0} : std::vector<double>{0, 0}, 1e-6);
      }
    });
}

// d(a / b)/db = -dy * (a / b) / b, in PyTorch's order: -(dy * y) / b overflowed to -inf for a = 3e38,
// b = 10, dy = 20 in float32 (the gradient is -6e37).
TEST_CASE("gradients: the divisor's gradient does not overflow where it is finite") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      Tensor a = leaf(dev.index, BRAID_FLOAT32, {1}, {3e38}), b = leaf(dev.index, BRAID_FLOAT32, {1}, {10});
      Tensor y;
      {
        braid::AutogradScope rec(ctx);
        y = a / b;
      }
      braid::backward(y, braid::Tensor::from_vector(ctx, dev.index, {1}, std::vector<float>{20}));
      check_values(grad_of(b), {-6e37}, 1e-6);
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

// A gradient masked off (relu below 0, the smaller side of maximum, pow's base where the exponent is
// 0) is 0 even where the upstream gradient is infinite, as PyTorch selects (threshold_backward, where);
// multiplying by a 0/1 mask made it NaN, which then reached the parameters.
TEST_CASE("gradients: masked gradients stay 0 under an infinite upstream gradient (as PyTorch)") {
  auto& ctx = harness::context();
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        const std::vector<double> v = {-1, 0, 2, -3, 4};
        Tensor x = leaf(dev.index, dt, {5}, v);
        Tensor s;
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::sqrt(braid::relu(x)));
        }
        braid::backward(s);
        check_values(grad_of(x), {0, 0, 0.5 / std::sqrt(2.0), 0, 0.25}, 1e-6);
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::sqrt(braid::maximum(x, 0.0)));  // a tie at 0 shares inf: inf
        }
        braid::backward(s);
        check_values(grad_of(x), {0, inf, 0.5 / std::sqrt(2.0), 0, 0.25}, 1e-6);
        Tensor zeros = braid::cast(Tensor::from_vector(ctx, dev.index, {5}, std::vector<double>(5, 0.0)), dt);
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::sqrt(braid::neg(braid::minimum(x, zeros))));
        }
        braid::backward(s);
        check_values(grad_of(x), {-0.5, inf, 0, -0.5 / std::sqrt(3.0), 0}, 1e-6);  // sqrt(-0): -inf, then -1
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::log(braid::pow(x, zeros) - 1.0));  // log(0): an infinite upstream gradient
        }
        braid::backward(s);
        check_values(grad_of(x), {0, 0, 0, 0, 0}, 0);
      }
    });
}

// NaN compares false both ways: maximum and minimum pass the whole gradient to both operands, and
// relu passes it at a NaN input, as PyTorch's formulas do.
TEST_CASE("gradients: NaN operands of maximum, minimum and relu get the gradient (as PyTorch)") {
  auto& ctx = harness::context();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        for (bool take_max : {true, false}) {
          Tensor a = leaf(dev.index, dt, {4}, {nan, 1, nan, 2});
          Tensor b = leaf(dev.index, dt, {4}, {2, nan, nan, 2});
          Tensor s;
          {
            braid::AutogradScope rec(ctx);
            s = braid::sum(take_max ? braid::maximum(a, b) : braid::minimum(a, b));
          }
          braid::backward(s);
          check_values(grad_of(a), {1, 1, 1, 0.5}, 0);
          check_values(grad_of(b), {1, 1, 1, 0.5}, 0);
        }
        Tensor x = leaf(dev.index, dt, {3}, {nan, 1, -1});
        Tensor s;
        {
          braid::AutogradScope rec(ctx);
          s = braid::sum(braid::relu(x));
        }
        braid::backward(s);
        check_values(grad_of(x), {1, 1, 0}, 0);
      }
    });
}

// d/dx of 0^x and (-0)^x: 0 where x >= 0, y * ln 0 elsewhere (its sign follows y's), NaN at NaN.
TEST_CASE("gradients: the exponent's gradient of a zero base (as PyTorch)") {
  auto& ctx = harness::context();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        for (double base : {0.0, -0.0}) {
          INFO("base ", base);
          Tensor x = leaf(dev.index, dt, {5}, {-1, -3, -2, nan, 2});
          Tensor s;
          {
            braid::AutogradScope rec(ctx);
            s = braid::sum(braid::binary(BRAID_BINARY_POW, x, base, true));
          }
          braid::backward(s);
          const double odd = std::signbit(base) ? inf : -inf;
          check_values(grad_of(x), {odd, odd, -inf, nan, 0}, 0);
        }
      }
    });
}

TEST_CASE("gradients: where passes the gradient to the side it picked, summed over broadcast axes") {
  auto& ctx = harness::context();
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, " dtype ", harness::dtype_name(dt));
        Tensor c = Tensor::from_vector(ctx, dev.index, {2, 3}, std::vector<double>{1, 0, 1, 0, 0, 1});
        Tensor a = leaf(dev.index, dt, {3}, {1, 2, 3});
        Tensor b = leaf(dev.index, dt, {2, 1}, {0, 0});
        Tensor s;
        {
          braid::AutogradScope rec(ctx);
          // log(0) where b is picked: an infinite gradient, which must not reach a through the mask.
          s = braid::sum(braid::log(braid::where(c, a, b)) * 2.0);
        }
        braid::backward(s);
        check_values(grad_of(a), {2.0, 0, 2.0 / 3 * 2}, 1e-6);
        check_values(grad_of(b), {inf, inf}, 0);
      }
    });
}

// attach_grad on a value with a history makes it a leaf for the ops recorded after; an op recorded
// before keeps its path to the history, so the inputs still get its gradient (it was cut, and x kept a
// stale gradient from the step before).
TEST_CASE("gradients: attach_grad on an intermediate keeps the history of ops recorded before") {
  auto& ctx = harness::context();
  for (const auto& dev : harness::each_device())
    harness::on_device(dev, [&] {
      Tensor x = leaf(dev.index, BRAID_FLOAT32, {3}, {1, 2, 3});
      Tensor y, s1, s2;
      {
        braid::AutogradScope rec(ctx);
        y = braid::exp(x);
        s1 = braid::sum(y * 3.0);
      }
      braid::attach_grad(y);
      braid::backward(s1);
      check_values(grad_of(x), {3 * std::exp(1.0), 3 * std::exp(2.0), 3 * std::exp(3.0)}, 1e-5);
      check_values(grad_of(y), {0, 0, 0}, 0);  // s1 was recorded before y became a leaf
      {
        braid::AutogradScope rec(ctx);
        s2 = braid::sum(y * 2.0);
      }
      braid::backward(s2);
      check_values(grad_of(y), {2, 2, 2}, 0);
    });
}
