// Optimizer updates, applied in place on the parameters and their state.
#include <cmath>
#include <cstring>

#include "core/in_struct.h"
#include "ops/entry.h"
#include "ops/op_builder.h"

using namespace braid;

namespace {
// Validates that every state tensor matches w, adds them as inputs, and marks the updated ones as
// in-place outputs.
void add_operands(OpBuilder& op, std::initializer_list<std::pair<braid_tensor, const char*>> inputs,
                  std::initializer_list<int> updated) {
  std::vector<Tensor*> ts;
  for (auto [h, name] : inputs) ts.push_back(&op.input(h, name));
  Tensor& w = *ts[0];
  require_float(w, op.name(), "w");
  for (size_t i = 1; i < ts.size(); ++i) {
    if (!(ts[i]->shape == w.shape))
      fail(BRAID_ERR_SHAPE, op.name(), ": ", std::data(inputs)[i].second, " has shape ", ts[i]->shape.str(),
           " but w has ", w.shape.str());
    require_same_dtype(w, *ts[i], op.name());
  }
  op.require_kernel(w.dtype);
  for (int i : updated) op.add_inplace_output(*ts[static_cast<size_t>(i)]);
}

void require_finite(std::initializer_list<double> values, const char* op) {
  for (double v : values)
    if (!std::isfinite(v)) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": hyper-parameters must be finite");
}
}  // namespace

void entry::sgd_update(braid_tensor w, braid_tensor g, double lr, double weight_decay) {
  require_finite({lr, weight_decay}, "sgd_update");
  OpBuilder op("sgd_update", BRAID_KOP_SGD_UPDATE);
  add_operands(op, {{w, "w"}, {g, "g"}}, {0});
  op.call().f[0] = lr, op.call().f[1] = weight_decay;
  op.push();
}

BRAID_API braid_status braid_sgd_update(braid_tensor w, braid_tensor g, double lr, double weight_decay) {
  return guard("braid_sgd_update", [&] { entry::sgd_update(w, g, lr, weight_decay); });
}

void entry::sgd_momentum_update(braid_tensor w, braid_tensor g, braid_tensor mom, double lr, double momentum,
                                double weight_decay) {
  require_finite({lr, momentum, weight_decay}, "sgd_momentum_update");
  OpBuilder op("sgd_momentum_update", BRAID_KOP_SGD_MOMENTUM);
  add_operands(op, {{w, "w"}, {g, "g"}, {mom, "mom"}}, {0, 2});
  op.call().f[0] = lr, op.call().f[1] = momentum, op.call().f[2] = weight_decay;
  op.push();
}

BRAID_API braid_status braid_sgd_momentum_update(braid_tensor w, braid_tensor g, braid_tensor mom, double lr,
                                                 double momentum, double weight_decay) {
  return guard("braid_sgd_momentum_update", [&] { entry::sgd_momentum_update(w, g, mom, lr, momentum, weight_decay); });
}

void entry::adam_update(braid_tensor w, braid_tensor g, braid_tensor m, braid_tensor v,
                        const braid_adam_params* params) {
  require(params, "params");
  const braid_adam_params p = read_in_struct<braid_adam_params>(params, BRAID_ADAM_PARAMS_INIT, "params");
  require_finite({p.lr, p.beta1, p.beta2, p.epsilon, p.weight_decay}, "adam_update");
  if (p.step < 1) fail(BRAID_ERR_INVALID_ARGUMENT, "adam_update: step must be >= 1");
  if (!(p.beta1 >= 0 && p.beta1 < 1 && p.beta2 >= 0 && p.beta2 < 1))
    fail(BRAID_ERR_INVALID_ARGUMENT, "adam_update: betas must be in [0, 1)");
  OpBuilder op("adam_update", BRAID_KOP_ADAM_UPDATE);
  add_operands(op, {{w, "w"}, {g, "g"}, {m, "m"}, {v, "v"}}, {0, 2, 3});
  auto& c = op.call();
  c.f[0] = p.lr, c.f[1] = p.beta1, c.f[2] = p.beta2, c.f[3] = p.epsilon, c.f[4] = p.weight_decay;
  c.i[0] = p.step;
  op.push();
}

BRAID_API braid_status braid_adam_update(braid_tensor w, braid_tensor g, braid_tensor m, braid_tensor v,
                                         const braid_adam_params* params) {
  return guard("braid_adam_update", [&] { entry::adam_update(w, g, m, v, params); });
}
