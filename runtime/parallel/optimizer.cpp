#include "parallel/optimizer.h"

#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "ops/call.h"
#include "ops/entry.h"
#include "ops/params.h"

namespace braid::parallel {

void check_learning_rate(double learning_rate, const char* what) {
  if (!std::isfinite(learning_rate) || learning_rate < 0)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": learning_rate must be finite and not negative, not ", learning_rate);
}

braid_optimizer_params checked_optimizer(const braid_optimizer_params* params, const char* what) {
  const braid_optimizer_params p = read_params<braid_optimizer_params>(params, BRAID_OPTIMIZER_PARAMS_INIT, what);
  if (int32_t k = enum_int(p.kind); k < 0 || k >= BRAID_OPTIMIZER_KIND_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": invalid braid_optimizer_kind ", k);
  for (double v : {p.learning_rate, p.momentum, p.weight_decay, p.beta1, p.beta2, p.epsilon, p.rescale_grad})
    if (!std::isfinite(v)) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": optimizer parameters must be finite");
  // As torch.optim refuses them: a negative learning rate climbs the loss, a negative weight decay
  // pushes the weights away from zero, and both were accepted silently (issue 31).
  check_learning_rate(p.learning_rate, what);
  if (p.weight_decay < 0)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": weight_decay must not be negative, not ", p.weight_decay);
  if (p.rescale_grad <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": rescale_grad must be positive");
  if (p.momentum < 0 || p.momentum >= 1) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": momentum must be in [0, 1)");
  if (p.kind == BRAID_OPTIMIZER_ADAM && !(p.beta1 >= 0 && p.beta1 < 1 && p.beta2 >= 0 && p.beta2 < 1))
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": Adam's betas must be in [0, 1)");
  // sqrt(v) + epsilon with a negative epsilon divides by 0 or flips the step's sign (torch.optim.Adam
  // refuses it too).
  if (p.kind == BRAID_OPTIMIZER_ADAM && p.epsilon < 0)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": Adam's epsilon must not be negative");
  return p;
}

void check_step(const braid_optimizer_params& p, double scale, const char* what) {
  // Adam's bias correction depends on the step number, a value of the call: a graph would repeat the
  // traced step's forever.
  if (p.kind == BRAID_OPTIMIZER_ADAM && t_trace_hook != nullptr)
    fail(BRAID_ERR_INVALID_STATE, what,
         ": an Adam step cannot be captured in a graph: its bias correction depends on the step number, which the "
         "graph would freeze; trace the forward and backward and step outside the trace, or use SGD");
  if (!std::isfinite(scale) || !(scale > 0))
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": rescale_grad / batch_size is ", scale, ", not a positive finite number");
  if (p.kind == BRAID_OPTIMIZER_SGD &&
      (!std::isfinite(p.learning_rate * scale) || !std::isfinite(p.weight_decay / scale)))
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": learning_rate * rescale_grad / batch_size (", p.learning_rate * scale,
         ") or weight_decay * batch_size / rescale_grad (", p.weight_decay / scale, ") is not finite");
}

namespace {
// Optimizer state (momentum, Adam's moments), made on a parameter's first step. Made outside any trace:
// in a traced step the zeros would be a kernel of the graph, refilled on every run (momentum would
// restart each step), and a hybrid function's first call would leave the state without memory.
TensorRef zeros_like(const Tensor& w) {
  const TracePause untraced;
  return op::run(entry::full, w.ctx, w.device().index, w.dtype, w.shape.ndim, w.shape.dims.data(), 0.0);
}
}  // namespace

void apply_update(const braid_optimizer_params& p, Tensor& w, Tensor& g, OptimizerState& state, double scale) {
  check_step(p, scale, "optimizer step");  // callers checked before changing anything; this is the rule
  ++state.step;
  if (p.kind == BRAID_OPTIMIZER_SGD) {
    // lr * (scale * g + wd * w) == (lr * scale) * (g + (wd / scale) * w): the scale folds into the
    // hyper-parameters instead of costing a pass over g.
    const double lr = p.learning_rate * scale, wd = p.weight_decay / scale;
    if (p.momentum == 0) {
      entry::sgd_update(&w, &g, lr, wd);
      return;
    }
    if (!state.momentum.get()) state.momentum = zeros_like(w);
    entry::sgd_momentum_update(&w, &g, state.momentum.get(), lr, p.momentum, wd);
    return;
  }
  // Adam's moments see the scaled gradient itself.
  TensorRef scaled;
  Tensor* grad = &g;
  if (scale != 1.0) {
    scaled = op::scalar(BRAID_BINARY_MUL, &g, scale);
    grad = scaled.get();
  }
  if (!state.m.get()) state.m = zeros_like(w);
  if (!state.v.get()) state.v = zeros_like(w);
  braid_adam_params a = BRAID_ADAM_PARAMS_INIT;
  a.lr = p.learning_rate, a.beta1 = p.beta1, a.beta2 = p.beta2, a.epsilon = p.epsilon, a.weight_decay = p.weight_decay;
  a.step = state.step;
  entry::adam_update(&w, grad, state.m.get(), state.v.get(), &a);
}

}  // namespace braid::parallel
