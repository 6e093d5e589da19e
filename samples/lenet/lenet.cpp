#include "lenet.h"

namespace lenet {

using braid::Tensor;

Model init(const braid::Context& ctx, braid::Device d, double std) {
  auto normal = [&](braid::List<int64_t> shape) {
    Tensor t = Tensor::random_normal(ctx, d, BRAID_FLOAT32, shape, 0.0, std);
    braid::attach_grad(t);
    return t;
  };
  auto zeros = [&](int64_t n) {
    Tensor t = Tensor::zeros(ctx, d, BRAID_FLOAT32, {n});
    braid::attach_grad(t);
    return t;
  };
  return {normal({20, 1, 3, 3}), zeros(20),  normal({50, 20, 5, 5}), zeros(50),
          normal({800, 128}),    zeros(128), normal({128, 10}),      zeros(10)};
}

Tensor forward(const Model& m, const Tensor& x) {
  const braid::Pool2dOptions avg2{.kind = BRAID_POOL_AVG, .kernel = {2, 2}};
  Tensor h = braid::pool2d(braid::relu(braid::conv2d(x, m.w1, m.b1)), avg2);  // 20 x 13 x 13
  h = braid::pool2d(braid::relu(braid::conv2d(h, m.w2, m.b2)), avg2);         // 50 x 4 x 4
  h = braid::reshape(h, {-1, 800});
  h = braid::relu(braid::matmul(h, m.w3) + m.b3);
  return braid::matmul(h, m.w4) + m.b4;
}

Tensor train_step(const braid::Context& ctx, const Model& m, const Tensor& x, const Tensor& y, double lr) {
  Tensor loss;
  {
    braid::AutogradScope record(ctx);
    loss = braid::mean(braid::softmax_cross_entropy(forward(m, x), y));
  }
  braid::backward(loss);
  for (const Tensor& p : m.params()) braid::sgd_update(p, braid::grad(p), lr);
  return loss;
}

Tensor shard_backward(const braid::Context& ctx, const Model& m, const Tensor& x, const Tensor& y) {
  Tensor loss;
  {
    braid::AutogradScope record(ctx);
    loss = braid::sum(braid::softmax_cross_entropy(forward(m, x), y));
  }
  braid::backward(loss);
  return loss;
}

Model replicate_to(const Model& m, braid::Device d) {
  std::vector<Tensor> copies;
  for (const Tensor& p : m.params()) {
    copies.push_back(braid::copy_to(p, d));
    braid::attach_grad(copies.back());
  }
  return {copies[0], copies[1], copies[2], copies[3], copies[4], copies[5], copies[6], copies[7]};
}

Tensor correct(const Model& m, const Tensor& x, const Tensor& y) {
  Tensor pred = braid::argmax(forward(m, x), 1);
  return braid::sum(braid::cast(braid::equal(pred, braid::cast(y, BRAID_INT64)), BRAID_FLOAT32));
}

}  // namespace lenet
