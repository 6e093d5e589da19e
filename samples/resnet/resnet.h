// The chapter's ResNet-18 for Fashion-MNIST (28x28, 1 channel): a 3x3 convolution with stride 1 and
// padding 1, batch norm and ReLU (no max pooling), four stages of two residual blocks with 64, 128,
// 256 and 512 channels (the first block of each later stage halves the size with stride 2 and a 1x1
// shortcut), global average pooling and a dense layer to 10 classes.
#pragma once
#include <braid.hpp>

#include <vector>

namespace resnet {

struct BatchNorm {
  braid::Tensor gamma, beta, running_mean, running_var;
};

struct Residual {
  braid::Tensor w1, w2, w_shortcut;  // w_shortcut: null when the block keeps its shape
  BatchNorm bn1, bn2;
  int32_t stride = 1;
};

struct Model {
  braid::Tensor w0;
  BatchNorm bn0;
  std::vector<Residual> blocks;
  braid::Tensor dense_w, dense_b;
  // The trained parameters, in a fixed order (the running statistics are state, not parameters).
  std::vector<braid::Tensor> params() const;
  // The batch norms' running statistics (mean, variance), in a fixed order.
  std::vector<braid::Tensor> running_stats() const;
};

// Convolution and dense weights from the context's RNG (PyTorch's default scale), BN gamma 1 and beta 0, gradients
// attached.
Model init(const braid::Context& ctx, braid::Device d);
// A copy on device d (the replicas of a data-parallel run start equal), gradients attached.
Model replicate_to(const Model& m, braid::Device d);
// Logits [B, 10] of images [B, 1, 28, 28]; training: batch statistics (and running ones updated).
braid::Tensor forward(const Model& m, const braid::Tensor& x, bool training);

}  // namespace resnet
