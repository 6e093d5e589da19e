// The gradient registry: input gradients of a recorded node from its output gradients.
#pragma once
#include <span>
#include <vector>

#include "autograd/tape.h"

namespace braid::autograd {

// dy holds one gradient per output of n (backward fills those nobody produced with zeros). dx gets one
// entry per input: empty where the input needs no gradient or has none (integer labels).
void gradient(Node& n, std::span<Tensor* const> dy, std::vector<TensorRef>& dx);

// The values gradient(n) reads, as bits: input k is bit k, output k is bit kSavedOutput + k. Backward
// checks that their storages still have the versions recorded (an add reads neither operand, so
// updating one in place between forward and backward is fine; an exp reads its result).
inline constexpr int kSavedOutput = 16;
uint32_t saved_values(const Node& n);

}  // namespace braid::autograd
