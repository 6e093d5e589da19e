// Finite-difference gradient checks: the gradients autograd computes for f at float64 inputs against
// central differences of the same f (run on the device, in float64).
#pragma once
#include <functional>
#include <vector>

#include "ops/harness.h"

namespace gradcheck {

using Fn = std::function<braid::Tensor(const std::vector<braid::Tensor>&)>;

struct Input {
  ref::Array value;
  bool grad = true;                   // check the gradient of this input
  braid_dtype dtype = BRAID_FLOAT64;  // integer inputs (labels) are never differentiated
};

// Checks d(sum(f(x) * r))/dx for a fixed random r (the head gradient) against central differences
// with step eps, for every input with grad set, on device d. Reports the first bad element.
void check(braid::Device d, const std::vector<Input>& inputs, const Fn& f, double eps = 1e-6, double tol = 1e-6);

// Values in [lo, hi) that keep at least `gap` between any two (max/min/relu stay away from ties).
ref::Array spread(const ref::Shape& shape, double lo, double hi, uint32_t seed);

}  // namespace gradcheck
