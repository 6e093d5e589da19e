// Indexing: take (numpy.take / torch.index_select along one axis, any index shape) and its gradient,
// the TAKE and TAKE_BWD kernels over x viewed as [outer, n, inner].
#include "ops/call.h"
#include "ops/copy.h"
#include "ops/entry.h"
#include "ops/op_builder.h"

using namespace braid;

namespace {

// A contiguous tensor's storage seen as [outer, middle, inner], for the indexing kernels.
braid_buffer_view as_3d(const Tensor& t, int64_t outer, int64_t middle, int64_t inner) {
  braid_buffer_view v = t.view();
  v.ndim = 3;
  v.shape[0] = outer, v.shape[1] = middle, v.shape[2] = inner;
  v.strides[0] = middle * inner, v.strides[1] = inner, v.strides[2] = 1;
  return v;
}

braid_buffer_view as_1d(const Tensor& t) {
  braid_buffer_view v = t.view();
  v.ndim = 1;
  v.shape[0] = t.shape.numel();
  v.strides[0] = 1;
  return v;
}

}  // namespace

void entry::take(braid_tensor x, braid_tensor indices, int32_t axis, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("take", BRAID_KOP_TAKE);
  Tensor& a = op.operand(x, "x");
  Tensor& idx = op.operand(indices, "indices");
  if (a.shape.ndim == 0) fail(BRAID_ERR_SHAPE, "take: x is 0-d; it has no axis to take along");
  if (idx.dtype == BRAID_UINT8) {  // the kernels read int32 or int64 indices
    const TensorRef wide = braid::op::cast(&idx, BRAID_INT32);
    *out = braid::op::run(entry::take, x, static_cast<braid_tensor>(wide.get()), axis).release();
    return;
  }
  if (!dtype_is_int(idx.dtype))
    fail(BRAID_ERR_DTYPE, "take: indices must be integers (int32, int64 or uint8), not ", dtype_name(idx.dtype));
  if ((a.dtype == BRAID_BOOL || a.dtype == BRAID_UINT8) && !a.device().supports(BRAID_KOP_TAKE, a.dtype)) {
    // A backend whose TAKE copies 32- and 64-bit elements only (Vulkan): through int32, exactly.
    const TensorRef wide = braid::op::cast(&a, BRAID_INT32);
    const TensorRef r = braid::op::run(entry::take, static_cast<braid_tensor>(wide.get()), indices, axis);
    *out = (a.dtype == BRAID_BOOL ? bool_from_zero_one(*r) : braid::op::cast(r.get(), a.dtype)).release();
    return;
  }
  const int32_t ax = normalize_axis(axis, a.shape.ndim, "take");
  Shape s;
  s.ndim = a.shape.ndim - 1 + idx.shape.ndim;
  if (s.ndim > BRAID_MAX_DIMS)
    fail(BRAID_ERR_SHAPE, "take: the result would have ", s.ndim, " dimensions (at most ", BRAID_MAX_DIMS, ")");
  int64_t outer = 1, inner = 1;
  int d = 0;
  for (int k = 0; k < ax; ++k) outer *= (s[d++] = a.shape[k]);
  for (int k = 0; k < idx.shape.ndim; ++k) s[d++] = idx.shape[k];
  for (int k = ax + 1; k < a.shape.ndim; ++k) inner *= (s[d++] = a.shape[k]);
  const int64_t n = a.shape[ax], m = idx.shape.numel();
  op.add_input_view(a, as_3d(a, outer, n, inner));
  op.add_input_view(idx, as_1d(idx));
  op.require_kernel(a.dtype);
  Tensor& y = op.output(a.dtype, s);
  op.call().outputs[0] = as_3d(y, outer, m, inner);
  op.call().i[0] = ax;
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_take(braid_tensor x, braid_tensor indices, int32_t axis, braid_tensor* out) {
  return guard("braid_take", [&] { entry::take(x, indices, axis, out); });
}

void entry::take_backward(braid_tensor dy, braid_tensor indices, const int64_t* x_shape, int32_t x_ndim, int32_t axis,
                          braid_tensor* dx) {
  require(dx, "dx");
  *dx = nullptr;
  OpBuilder op("take_backward", BRAID_KOP_TAKE_BWD);
  Tensor& g = op.operand(dy, "dy");
  Tensor& idx = op.operand(indices, "indices");
  const Shape xs = Shape::from(x_ndim, x_shape, "x_shape");
  const int32_t ax = normalize_axis(axis, xs.ndim, "take_backward");
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < ax; ++k) outer *= xs[k];
  for (int k = ax + 1; k < xs.ndim; ++k) inner *= xs[k];
  const int64_t m = idx.shape.numel();
  if (g.shape.numel() != outer * m * inner)
    fail(BRAID_ERR_SHAPE, "take_backward: dy ", g.shape.str(), " does not match x ", xs.str(), " and ", m, " indices");
  op.add_input_view(g, as_3d(g, outer, m, inner));
  op.add_input_view(idx, as_1d(idx));
  op.require_kernel(g.dtype);
  Tensor& out = op.output(g.dtype, xs);
  op.call().outputs[0] = as_3d(out, outer, xs[ax], inner);
  op.call().i[0] = ax;
  op.push();
  *dx = op.release_output(0);
}
