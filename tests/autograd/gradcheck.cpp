#include "gradcheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

namespace gradcheck {

namespace {
// sum(y * r) on the host, in double.
double project(const braid::Tensor& y, const ref::Array& r) {
  const ref::Array v = harness::download(y);
  double s = 0;
  for (size_t i = 0; i < v.data.size(); ++i) s += v.data[i] * r.data[i];
  return s;
}

std::vector<braid::Tensor> upload_all(braid::Device d, const std::vector<Input>& inputs) {
  std::vector<braid::Tensor> xs;
  for (const Input& in : inputs) xs.push_back(harness::upload(d, in.dtype, in.value));
  return xs;
}
}  // namespace

ref::Array spread(const ref::Shape& shape, double lo, double hi, uint32_t seed) {
  ref::Array a(shape);
  const size_t n = a.data.size();
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * (double(i) + 0.5) / double(std::max<size_t>(n, 1));
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  a.data = v;
  return a;
}

void check(braid::Device d, const std::vector<Input>& inputs, const Fn& f, double eps, double tol) {
  auto& ctx = harness::context();
  // Analytic: record f, backward with head gradient r.
  std::vector<braid::Tensor> xs = upload_all(d, inputs);
  for (size_t k = 0; k < xs.size(); ++k)
    if (inputs[k].grad) braid::attach_grad(xs[k]);
  braid::Tensor y;
  {
    braid::AutogradScope rec(ctx);
    y = f(xs);
  }
  const ref::Array r = harness::random_array(y.shape(), -1, 1, BRAID_FLOAT64, 4242);
  braid::backward(y, harness::upload(d, BRAID_FLOAT64, r));
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].grad) continue;
    const ref::Array got = harness::download(braid::grad(xs[k]));
    REQUIRE(got.shape == inputs[k].value.shape);
    // Numeric: perturb one element at a time (no recording).
    ref::Array want(inputs[k].value.shape);
    std::vector<Input> probe = inputs;
    for (size_t j = 0; j < want.data.size(); ++j) {
      const double v = inputs[k].value.data[j];
      probe[k].value.data[j] = v + eps;
      const double up = project(f(upload_all(d, probe)), r);
      probe[k].value.data[j] = v - eps;
      const double down = project(f(upload_all(d, probe)), r);
      probe[k].value.data[j] = v;
      want.data[j] = (up - down) / (2 * eps);
    }
    INFO("input ", k);
    CHECK_CLOSE(got, want, tol);
  }
}

}  // namespace gradcheck
