// Elementwise ops: unary, binary with NumPy broadcasting, and binary with a scalar.
#include <cmath>

#include "ops/op_builder.h"
#include "ops/shapes.h"

using namespace braid;

namespace {

bool unary_allows_int(braid_unary_op op) {
  return op == BRAID_UNARY_NEG || op == BRAID_UNARY_ABS || op == BRAID_UNARY_RELU || op == BRAID_UNARY_SQUARE ||
         op == BRAID_UNARY_SIGN;
}

bool binary_allows_int(braid_binary_op op) {
  return op != BRAID_BINARY_DIV && op != BRAID_BINARY_POW;
}

void check_binary(const braid_binary_op& op, braid_dtype dtype, const char* name) {
  if (int32_t v = enum_int(op); v < 0 || v >= BRAID_BINARY_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, name, ": invalid braid_binary_op ", v);
  if (!(dtype_is_float(dtype) || (dtype_is_int(dtype) && binary_allows_int(op))))
    fail(BRAID_ERR_DTYPE, name, ": no ", dtype_name(dtype), " version of this op");
}

}  // namespace

extern "C" {

BRAID_API braid_status braid_unary(braid_unary_op uop, braid_tensor x, braid_tensor* out) {
  return guard("braid_unary", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op("unary", BRAID_KOP_UNARY);
    Tensor& a = op.input(x, "x");
    if (int32_t v = enum_int(uop); v < 0 || v >= BRAID_UNARY_COUNT)
      fail(BRAID_ERR_INVALID_ARGUMENT, "invalid braid_unary_op ", v);
    if (!(dtype_is_float(a.dtype) || (dtype_is_int(a.dtype) && unary_allows_int(uop))))
      fail(BRAID_ERR_DTYPE, "no ", dtype_name(a.dtype), " version of this unary op");
    op.require_kernel(a.dtype);
    op.output(a.dtype, a.shape);
    op.call().i[0] = uop;
    op.push();
    *out = op.release_output(0);
  });
}

BRAID_API braid_status braid_binary(braid_binary_op bop, braid_tensor a, braid_tensor b, braid_tensor* out) {
  return guard("braid_binary", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op("binary", BRAID_KOP_BINARY);
    Tensor& ta = op.operand(a, "a");
    Tensor& tb = op.operand(b, "b");
    require_same_dtype(ta, tb, "binary");
    check_binary(bop, ta.dtype, "binary");
    Shape shape = broadcast_shapes(ta.shape, tb.shape, "binary");
    op.add_input_view(ta, broadcast_view(ta.view(), ta.shape, shape));
    op.add_input_view(tb, broadcast_view(tb.view(), tb.shape, shape));
    op.require_kernel(ta.dtype);
    op.output(ta.dtype, shape);
    op.call().i[0] = bop;
    op.push();
    *out = op.release_output(0);
  });
}

BRAID_API braid_status braid_binary_scalar(braid_binary_op bop, braid_tensor x, double scalar, int32_t reverse,
                                           braid_tensor* out) {
  return guard("braid_binary_scalar", [&] {
    require(out, "out");
    *out = nullptr;
    if (int32_t v = enum_int(bop); v < 0 || v >= BRAID_BINARY_COUNT)
      fail(BRAID_ERR_INVALID_ARGUMENT, "binary_scalar: invalid braid_binary_op ", v);
    // NumPy's and PyTorch's promotion: an integer tensor with a scalar that is not an integer (2.5,
    // inf, NaN), or divided (true division), computes in floating point, float32 as PyTorch's default
    // dtype; comparisons then compare exactly (x < 2.5 holds at 2) and give 1 or 0 in float32.
    if (dtype_is_int(checked_tensor(x, "x").dtype) && (bop == BRAID_BINARY_DIV || !(std::trunc(scalar) == scalar))) {
      braid_tensor promoted = nullptr;
      if (braid_status st = braid_cast(x, BRAID_FLOAT32, &promoted); st != BRAID_OK) fail(st, braid_last_error());
      const TensorRef hold(promoted);
      if (braid_status st = braid_binary_scalar(bop, promoted, scalar, reverse, out); st != BRAID_OK)
        fail(st, braid_last_error());
      return;
    }
    OpBuilder op("binary_scalar", BRAID_KOP_BINARY_SCALAR);
    Tensor& a = op.input(x, "x");
    check_binary(bop, a.dtype, "binary_scalar");
    op.require_kernel(a.dtype);
    op.output(a.dtype, a.shape);
    op.call().i[0] = bop;
    op.call().i[1] = reverse != 0;
    op.call().f[0] = scalar;
    op.push();
    *out = op.release_output(0);
  });
}

}  // extern "C"
