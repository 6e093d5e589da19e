// Matrix multiplication, 2-D or batched.
#include "ops/amp.h"
#include "ops/call.h"
#include "ops/entry.h"
#include "ops/op_builder.h"

using namespace braid;

namespace {
// A 2-D or 3-D tensor as a 3-D [batch, rows, cols] view. Batch stride 0 broadcasts a 2-D operand, or
// a batch of 1, over every batch (the MATMUL kernel ABI reads it so).
braid_buffer_view batched_view(const Tensor& t, int64_t batch) {
  braid_buffer_view v = t.view();
  const Shape& s = t.shape;
  int64_t rows = s[s.ndim - 2], cols = s[s.ndim - 1];
  v.ndim = 3;
  v.shape[0] = batch;
  v.shape[1] = rows;
  v.shape[2] = cols;
  v.strides[0] = s.ndim == 3 && s[0] == batch ? rows * cols : 0;
  v.strides[1] = cols;
  v.strides[2] = 1;
  return v;
}

// The batch of the result: torch.matmul's broadcasting of the batch dimensions, where a 2-D operand
// has none and a batch of 1 stretches to the other's ([1,2,3] @ [3,3,4] is [3,2,4]).
int64_t broadcast_batch(const Shape& sa, const Shape& sb) {
  if (sa.ndim == 2 || sb.ndim == 2) return sa.ndim == 3 ? sa[0] : (sb.ndim == 3 ? sb[0] : 1);
  if (sa[0] == sb[0] || sb[0] == 1) return sa[0];
  if (sa[0] == 1) return sb[0];
  fail(BRAID_ERR_SHAPE, "matmul: batch sizes differ (", sa[0], " vs ", sb[0], ") and neither is 1");
}
}  // namespace

namespace {

// The MATMUL kernel on a and b, whose dtypes the caller checked: float32 or float64 operands give their
// dtype; bfloat16 or float16 ones (autocast's, plugin ABI 1.7) give float32, accumulated in float32.
void push_matmul(OpBuilder& op, Tensor& ta, Tensor& tb, int32_t transpose_a, int32_t transpose_b, braid_tensor* out) {
  const Shape &sa = ta.shape, &sb = tb.shape;
  if (sa.ndim < 2 || sa.ndim > 3 || sb.ndim < 2 || sb.ndim > 3)
    fail(BRAID_ERR_SHAPE, "matmul: operands must be 2-D or 3-D, got ", sa.str(), " and ", sb.str());
  int64_t m = transpose_a ? sa[sa.ndim - 1] : sa[sa.ndim - 2];
  int64_t ka = transpose_a ? sa[sa.ndim - 2] : sa[sa.ndim - 1];
  int64_t kb = transpose_b ? sb[sb.ndim - 1] : sb[sb.ndim - 2];
  int64_t n = transpose_b ? sb[sb.ndim - 2] : sb[sb.ndim - 1];
  if (ka != kb)
    fail(BRAID_ERR_SHAPE, "matmul: inner dimensions differ (", sa.str(), transpose_a ? "ᵀ" : "", " @ ", sb.str(),
         transpose_b ? "ᵀ" : "", ": ", ka, " vs ", kb, ")");
  const int64_t batch = broadcast_batch(sa, sb);
  op.add_input_view(ta, batched_view(ta, batch));
  op.add_input_view(tb, batched_view(tb, batch));
  op.require_kernel(ta.dtype);
  Shape result;
  if (sa.ndim == 2 && sb.ndim == 2) {
    result.ndim = 2;
    result[0] = m;
    result[1] = n;
  } else {
    result.ndim = 3;
    result[0] = batch;
    result[1] = m;
    result[2] = n;
  }
  // m and n come from different operands: both may be large when k is 0 (an empty product).
  if (!result.fits()) fail(BRAID_ERR_OUT_OF_MEMORY, "matmul: the result ", result.str(), " is too large");
  Tensor& y = op.output(dtype_is_float(ta.dtype) ? ta.dtype : BRAID_FLOAT32, result);
  braid_buffer_view yv = y.view();
  yv.ndim = 3;
  yv.shape[0] = batch, yv.shape[1] = m, yv.shape[2] = n;
  yv.strides[0] = m * n, yv.strides[1] = n, yv.strides[2] = 1;
  op.call().outputs[0] = yv;
  op.call().i[0] = transpose_a != 0;
  op.call().i[1] = transpose_b != 0;
  op.push();
  *out = op.release_output(0);
}

}  // namespace

void entry::matmul(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("matmul", BRAID_KOP_MATMUL);
  Tensor& ta = op.operand(a, "a");
  Tensor& tb = op.operand(b, "b");
  // Autocast (this builder is dropped): float32 operands cast to its dtype for a device with 16-bit
  // float products (float32 accumulation); elsewhere rounded to it and multiplied in float32.
  if (const braid_dtype low = autocast_dtype(*ta.ctx); low != BRAID_FLOAT32 && ta.dtype == BRAID_FLOAT32 &&
                                                       tb.dtype == BRAID_FLOAT32 &&
                                                       ta.device().supports(BRAID_KOP_MATMUL, low)) {
    const TensorRef la = braid::op::cast(&ta, low), lb = braid::op::cast(&tb, low);
    *out = braid::op::run(entry::matmul_low, la.get(), lb.get(), transpose_a, transpose_b).release();
    return;
  }
  if (autocast_op(ta, tb, out, [&](Tensor* ra, Tensor* rb) {
        return braid::op::matmul(ra, rb, transpose_a != 0, transpose_b != 0);
      }))
    return;
  require_float(ta, "matmul", "a");
  require_same_dtype(ta, tb, "matmul");
  push_matmul(op, ta, tb, transpose_a, transpose_b, out);
}

void entry::matmul_low(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("matmul", BRAID_KOP_MATMUL);
  Tensor& ta = op.operand(a, "a");
  Tensor& tb = op.operand(b, "b");
  if (ta.dtype != BRAID_BFLOAT16 && ta.dtype != BRAID_FLOAT16)
    fail(BRAID_ERR_DTYPE, "matmul_low: a is ", dtype_name(ta.dtype), ", not bfloat16 or float16");
  require_same_dtype(ta, tb, "matmul_low");
  push_matmul(op, ta, tb, transpose_a, transpose_b, out);
}

BRAID_API braid_status braid_matmul(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b,
                                    braid_tensor* out) {
  return guard("braid_matmul", [&] { entry::matmul(a, b, transpose_a, transpose_b, out); });
}
