// The chapter's LeNet variant on braid: conv 3x3 (20) -> relu -> avg-pool 2 -> conv 5x5 (50) -> relu ->
// avg-pool 2 -> flatten -> dense 800->128 -> relu -> dense 128->10, trained with softmax cross-entropy
// and plain SGD through braid's autograd.
#pragma once
#include <braid.hpp>

#include <vector>

namespace lenet {

struct Model {
  braid::Tensor w1, b1, w2, b2, w3, b3, w4, b4;
  std::vector<braid::Tensor> params() const { return {w1, b1, w2, b2, w3, b3, w4, b4}; }
};

// Weights from N(0, std^2) (the context's counter-based RNG), zero biases, gradients attached.
Model init(const braid::Context& ctx, braid::Device d, double std = 0.01);
// Logits [B, 10] of images [B, 1, 28, 28].
braid::Tensor forward(const Model& m, const braid::Tensor& x);
// One SGD step on a batch: records the forward pass, back-propagates the mean loss, updates the
// parameters in place. Returns the batch's mean loss (a device scalar: reading it waits).
braid::Tensor train_step(const braid::Context& ctx, const Model& m, const braid::Tensor& x, const braid::Tensor& y,
                         double lr);
// Data parallelism: records the forward pass on one replica's shard and back-propagates the SUM of its
// per-sample losses (a braid::Trainer then all-reduces the gradients and divides by the global batch,
// so k replicas with b/k samples each take the step one device takes with b). Returns that sum.
braid::Tensor shard_backward(const braid::Context& ctx, const Model& m, const braid::Tensor& x, const braid::Tensor& y);
// A copy of m on device d, gradients attached (the replicas of a data-parallel run start equal).
Model replicate_to(const Model& m, braid::Device d);
// Number of correct predictions in a batch (a device scalar, float32).
braid::Tensor correct(const Model& m, const braid::Tensor& x, const braid::Tensor& y);

}  // namespace lenet
