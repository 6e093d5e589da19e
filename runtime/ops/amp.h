// Automatic mixed precision (autocast, docs/AMP.md): the calling thread's setting in a context, which
// matmul and conv2d read, and the rounding they apply to their float32 operands while it is on.
#pragma once
#include "braid.h"
#include "context/context.h"
#include "tensor/tensor.h"

namespace braid {

// What float32 matmul and conv2d operands are rounded to on this thread in ctx: BRAID_BFLOAT16,
// BRAID_FLOAT16, or BRAID_FLOAT32 (off, the default).
braid_dtype autocast_dtype(const Context& ctx) noexcept;

// Autocast off for a scope on this thread (the float32 op an autocast op runs on rounded operands).
class AutocastPause {
 public:
  explicit AutocastPause(const Context& ctx);
  ~AutocastPause();
  AutocastPause(const AutocastPause&) = delete;
  AutocastPause& operator=(const AutocastPause&) = delete;

 private:
  const Context& ctx_;
  braid_dtype prev_;
};

// x rounded to `dtype` and back to float32: two casts, which autograd records (the gradient reaching x
// is rounded the same way).
TensorRef round_through(Tensor& x, braid_dtype dtype);

// An autocast op (matmul, conv2d) on float32 operands a and b: when autocast is on, sets *out to
// op(a rounded, b rounded), run with autocast paused, and returns true; otherwise returns false.
template <class Op>
bool autocast_op(Tensor& a, Tensor& b, braid_tensor* out, Op&& op) {
  const braid_dtype low = autocast_dtype(*a.ctx);
  if (low == BRAID_FLOAT32 || a.dtype != BRAID_FLOAT32 || b.dtype != BRAID_FLOAT32) return false;
  const TensorRef ra = round_through(a, low), rb = round_through(b, low);
  const AutocastPause pause(*a.ctx);
  *out = op(ra.get(), rb.get()).release();
  return true;
}

}  // namespace braid
