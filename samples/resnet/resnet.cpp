#include "resnet.h"

#include <cmath>

namespace resnet {

using braid::Tensor;

namespace {

Tensor leaf(Tensor t) {
  braid::attach_grad(t);
  return t;
}

// PyTorch's default scale for convolutions and dense layers (kaiming_uniform with a = sqrt(5): variance
// 1 / (3 fan_in)), drawn from a normal: the logits start small and the loss near log(10).
Tensor weight(const braid::Context& ctx, braid::Device d, braid::List<int64_t> shape, int64_t fan_in) {
  return leaf(
      Tensor::random_normal(ctx, d, BRAID_FLOAT32, shape, 0.0, 1.0 / std::sqrt(3.0 * static_cast<double>(fan_in))));
}

BatchNorm batch_norm_init(const braid::Context& ctx, braid::Device d, int64_t c) {
  return {leaf(Tensor::ones(ctx, d, BRAID_FLOAT32, {c})), leaf(Tensor::zeros(ctx, d, BRAID_FLOAT32, {c})),
          Tensor::zeros(ctx, d, BRAID_FLOAT32, {c}), Tensor::ones(ctx, d, BRAID_FLOAT32, {c})};
}

Tensor bn(const Tensor& x, const BatchNorm& b, bool training) {
  return braid::batch_norm(x, b.gamma, b.beta, b.running_mean, b.running_var, {.training = training}).y;
}

Tensor conv(const Tensor& x, const Tensor& w, int32_t stride, int32_t padding) {
  return braid::conv2d(x, w, {}, {.stride = {stride, stride}, .padding = {padding, padding}});
}

Tensor copied(const Tensor& t, braid::Device d, bool grad) {
  if (!t) return t;
  Tensor c = braid::copy_to(t, d);
  if (grad) braid::attach_grad(c);
  return c;
}

BatchNorm copied(const BatchNorm& b, braid::Device d) {
  return {copied(b.gamma, d, true), copied(b.beta, d, true), copied(b.running_mean, d, false),
          copied(b.running_var, d, false)};
}

}  // namespace

std::vector<Tensor> Model::params() const {
  std::vector<Tensor> p{w0, bn0.gamma, bn0.beta};
  for (const Residual& r : blocks) {
    for (const Tensor& t : {r.w1, r.bn1.gamma, r.bn1.beta, r.w2, r.bn2.gamma, r.bn2.beta}) p.push_back(t);
    if (r.w_shortcut) p.push_back(r.w_shortcut);
  }
  p.push_back(dense_w);
  p.push_back(dense_b);
  return p;
}

std::vector<Tensor> Model::running_stats() const {
  std::vector<Tensor> s{bn0.running_mean, bn0.running_var};
  for (const Residual& r : blocks)
    for (const Tensor& t : {r.bn1.running_mean, r.bn1.running_var, r.bn2.running_mean, r.bn2.running_var})
      s.push_back(t);
  return s;
}

Model init(const braid::Context& ctx, braid::Device d) {
  Model m;
  m.w0 = weight(ctx, d, {64, 1, 3, 3}, 9);
  m.bn0 = batch_norm_init(ctx, d, 64);
  int64_t in = 64;
  for (int64_t out : {64, 128, 256, 512})
    for (int i = 0; i < 2; ++i) {
      Residual r;
      r.stride = (i == 0 && out != 64) ? 2 : 1;
      r.w1 = weight(ctx, d, {out, in, 3, 3}, in * 9);
      r.bn1 = batch_norm_init(ctx, d, out);
      r.w2 = weight(ctx, d, {out, out, 3, 3}, out * 9);
      r.bn2 = batch_norm_init(ctx, d, out);
      if (r.stride != 1 || in != out) r.w_shortcut = weight(ctx, d, {out, in, 1, 1}, in);
      m.blocks.push_back(std::move(r));
      in = out;
    }
  m.dense_w = weight(ctx, d, {512, 10}, 512);
  m.dense_b = leaf(Tensor::zeros(ctx, d, BRAID_FLOAT32, {10}));
  return m;
}

Model replicate_to(const Model& m, braid::Device d) {
  Model c;
  c.w0 = copied(m.w0, d, true);
  c.bn0 = copied(m.bn0, d);
  for (const Residual& r : m.blocks)
    c.blocks.push_back({copied(r.w1, d, true), copied(r.w2, d, true), copied(r.w_shortcut, d, true), copied(r.bn1, d),
                        copied(r.bn2, d), r.stride});
  c.dense_w = copied(m.dense_w, d, true);
  c.dense_b = copied(m.dense_b, d, true);
  return c;
}

Tensor forward(const Model& m, const Tensor& x, bool training) {
  Tensor h = braid::relu(bn(conv(x, m.w0, 1, 1), m.bn0, training));
  for (const Residual& r : m.blocks) {
    Tensor y = braid::relu(bn(conv(h, r.w1, r.stride, 1), r.bn1, training));
    y = bn(conv(y, r.w2, 1, 1), r.bn2, training);
    const Tensor shortcut = r.w_shortcut ? conv(h, r.w_shortcut, r.stride, 0) : h;
    h = braid::relu(y + shortcut);
  }
  h = braid::reshape(braid::pool2d(h, {.kind = BRAID_POOL_AVG, .global = true}), {-1, 512});
  return braid::matmul(h, m.dense_w) + m.dense_b;
}

}  // namespace resnet
