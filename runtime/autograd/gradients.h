// The gradient registry: input gradients of a recorded node from its output gradients.
#pragma once
#include <span>
#include <vector>

#include "autograd/tape.h"

namespace braid::autograd {

// dy holds one gradient per output of n (backward fills those nobody produced with zeros). dx gets one
// entry per input: empty where the input needs no gradient or has none (integer labels).
void gradient(Node& n, std::span<Tensor* const> dy, std::vector<TensorRef>& dx);

}  // namespace braid::autograd
