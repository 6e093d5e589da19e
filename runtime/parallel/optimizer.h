// The updaters KVStore and Trainer run: one parameter's optimizer step from its gradient, with the
// per-parameter state (momentum, Adam's moments) they keep.
#pragma once
#include <cstdint>

#include "braid.h"
#include "tensor/tensor.h"

namespace braid::parallel {

struct OptimizerState {
  TensorRef momentum;  // SGD with momentum
  TensorRef m, v;      // Adam
  int64_t step = 0;
};

// A learning rate alone (braid_trainer_set_learning_rate): finite and not negative.
void check_learning_rate(double learning_rate, const char* what);
// The struct read honouring struct_size, with every field checked as torch.optim checks them:
// finite; learning_rate and weight_decay not negative; momentum and Adam's betas in [0, 1); Adam's
// epsilon not negative; rescale_grad positive. BRAID_ERR_INVALID_ARGUMENT naming `what` otherwise.
braid_optimizer_params checked_optimizer(const braid_optimizer_params* params, const char* what);

// What apply_update would refuse, checked before a caller changes anything (the Trainer before its
// allreduce): hyper-parameters that are not finite once `scale` is folded in (an SGD step's
// lr * scale and weight_decay / scale; BRAID_ERR_INVALID_ARGUMENT), and an Adam step while the thread
// traces a graph, which would freeze its step number (BRAID_ERR_INVALID_STATE).
void check_step(const braid_optimizer_params& p, double scale, const char* what);

// One step of w from g scaled by `scale` (rescale_grad / batch size). The state tensors are made on
// w's device on the first step.
void apply_update(const braid_optimizer_params& p, Tensor& w, Tensor& g, OptimizerState& state, double scale);

// Turns a failed status of a C API call into the runtime's exception (with its message).
void check(braid_status status);

}  // namespace braid::parallel
