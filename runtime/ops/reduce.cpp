// Reductions over axes, and argmax.
#include "ops/call.h"
#include "ops/copy.h"
#include "ops/entry.h"
#include "ops/op_builder.h"
#include "ops/shapes.h"

using namespace braid;

void entry::reduce(const braid_reduce_op& rop, braid_tensor x, int32_t naxes, const int32_t* axes, int32_t keepdims,
                   braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("reduce", BRAID_KOP_REDUCE);
  Tensor& a = op.input(x, "x");
  if (int32_t v = enum_int(rop); v < 0 || v >= BRAID_REDUCE_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, "invalid braid_reduce_op ", v);
  // Integer mean and norm are refused, as torch.mean and torch.linalg.norm refuse them (NumPy
  // would return float64): cast to a float dtype first.
  bool int_ok = rop == BRAID_REDUCE_SUM || rop == BRAID_REDUCE_MAX || rop == BRAID_REDUCE_MIN;
  // bool: a sum counts the true elements (int64, as NumPy and PyTorch count), max is any and min is
  // all (bool, as torch.amax); mean and norm are refused as for integers.
  if (a.dtype == BRAID_BOOL && int_ok) {
    const TensorRef wide = braid::op::cast(&a, rop == BRAID_REDUCE_SUM ? BRAID_INT64 : BRAID_INT32);
    TensorRef r = braid::op::run(entry::reduce, rop, wide.get(), naxes, axes, keepdims);
    *out = (rop == BRAID_REDUCE_SUM ? std::move(r) : bool_from_zero_one(*r)).release();
    return;
  }
  if (!(dtype_is_float(a.dtype) || (dtype_is_int(a.dtype) && int_ok)))
    fail(BRAID_ERR_DTYPE, "no ", dtype_name(a.dtype), " version of this reduction");
  uint32_t mask = reduce_mask(a.shape.ndim, naxes, axes, "reduce");
  Shape kept = reduce_shape(a.shape, mask, true);
  if (a.shape.numel() == 0 && (rop == BRAID_REDUCE_MAX || rop == BRAID_REDUCE_MIN) && kept.numel() != 0)
    fail(BRAID_ERR_SHAPE, "max/min of an empty axis is undefined");
  // NumPy and PyTorch sum integers into int64 (4 x 2^30 is 2^32, not 0): an int32 input is widened
  // first (this builder is dropped unpushed) and the int64 sum accumulates in int64. Checked before
  // the cast is pushed, so a device without int64 sums refuses the call without doing work.
  if (rop == BRAID_REDUCE_SUM && a.dtype == BRAID_INT32) {
    op.require_kernel(BRAID_INT64);
    TensorRef wide = braid::op::cast(&a, BRAID_INT64);
    *out = braid::op::run(entry::reduce, rop, wide.get(), naxes, axes, keepdims).release();
    return;
  }
  op.require_kernel(a.dtype);
  Tensor& y = op.output(a.dtype, reduce_shape(a.shape, mask, keepdims != 0));
  op.call().outputs[0] = reshaped_view(y.view(), kept);  // the kernel sees the keepdims layout
  op.call().i[0] = rop;
  op.call().i[1] = mask;
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_reduce(braid_reduce_op rop, braid_tensor x, int32_t naxes, const int32_t* axes,
                                    int32_t keepdims, braid_tensor* out) {
  return guard("braid_reduce", [&] { entry::reduce(rop, x, naxes, axes, keepdims, out); });
}

namespace {

void argmax(braid_tensor x, int32_t axis, int32_t keepdims, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("argmax", BRAID_KOP_ARGMAX);
  Tensor& a = op.input(x, "x");
  if (a.dtype == BRAID_BOOL || a.dtype == BRAID_UINT8) {  // as NumPy's: the first true (largest) element
    const TensorRef wide = braid::op::cast(&a, BRAID_INT32);
    argmax(wide.get(), axis, keepdims, out);
    return;
  }
  if (!dtype_is_float(a.dtype) && !dtype_is_int(a.dtype))
    fail(BRAID_ERR_DTYPE, "no ", dtype_name(a.dtype), " version of argmax");
  // A 0-d tensor takes axis 0 (or -1), as in PyTorch: the kernel sees it as one element along axis 0.
  constexpr int64_t kOne = 1;  // the [1] a 0-d tensor is viewed as, without a heap allocation per call
  const Shape one = Shape::of({&kOne, 1});
  const Shape in = a.shape.ndim == 0 ? one : a.shape;
  int32_t ax = normalize_axis(axis, in.ndim, "argmax");
  if (in[ax] == 0) fail(BRAID_ERR_SHAPE, "argmax over an empty axis");
  Shape kept = reduce_shape(in, 1u << ax, true);
  op.require_kernel(a.dtype);
  Tensor& y = op.output(BRAID_INT64, a.shape.ndim == 0 ? a.shape : reduce_shape(in, 1u << ax, keepdims != 0));
  if (a.shape.ndim == 0) op.call().inputs[0] = reshaped_view(op.call().inputs[0], one);
  op.call().outputs[0] = reshaped_view(y.view(), kept);
  op.call().i[0] = ax;
  op.push();
  *out = op.release_output(0);
}

}  // namespace

BRAID_API braid_status braid_argmax(braid_tensor x, int32_t axis, int32_t keepdims, braid_tensor* out) {
  return guard("braid_argmax", [&] { argmax(x, axis, keepdims, out); });
}
