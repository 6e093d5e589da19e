// How ops and tensor writes reach autograd, a layer above them (docs/ARCHITECTURE.md, "Layers"):
// OpBuilder hands every pushed op, reshape and device copies their views and byte copies, and a host
// write the tensor it overwrote, to the recorder that autograd installs in the context
// (Recording::install) when it is first needed. It lives with the tensors, below the ops, because
// both report to it. Neither includes autograd; until a recorder is installed nothing was ever
// recorded, so there is nothing to tell.
#pragma once
#include <cstdint>
#include <span>

#include "braid_backend.h"
#include "context/context.h"
#include "tensor/tensor.h"

namespace braid {

// What OpBuilder knows about an op as it is pushed.
struct PushedOp {
  const char* name;
  braid_kernel_op kop;
  const braid_kernel_call* call;
  std::span<Tensor* const> operands;  // in kernel input order
  std::span<Tensor* const> outputs;   // in kernel output order
  uint32_t overwritten;               // bit k: output k is an existing tensor (the result of a copy op)
  bool inplace;                       // the op updates an operand in place: never recorded
};

struct OpRecorder {
  // Every pushed op, when some thread records or the op overwrites an existing tensor.
  void (*op)(Context& ctx, const PushedOp& op);
  // reshape (a view: no kernel, so no push).
  void (*reshape)(Context& ctx, Tensor& x, Tensor& y);
  // A copy of x to another device (a byte copy, not a kernel).
  void (*device_copy)(Context& ctx, Tensor& x, Tensor& y);
  // t written whole by what is not a kernel (an upload, a byte copy from another device).
  void (*overwritten)(Context& ctx, Tensor& t);
};

}  // namespace braid
