// Elementwise ops: unary, binary with NumPy broadcasting, and binary with a scalar.
#include <cmath>
#include <iterator>

#include "ops/call.h"
#include "ops/copy.h"
#include "ops/entry.h"
#include "ops/op_builder.h"
#include "ops/shapes.h"

using namespace braid;

namespace {

// Each op under its own name (the profiler's events, graph nodes, error messages): "relu", "add".
const char* unary_name(const braid_unary_op& op) {  // by reference: a C caller may pass any int
  static constexpr const char* kNames[] = {"neg",  "abs",     "exp",  "log",    "sqrt",
                                           "relu", "sigmoid", "tanh", "square", "sign"};
  static_assert(std::size(kNames) == BRAID_UNARY_COUNT);
  const int32_t v = enum_int(op);
  return v >= 0 && v < BRAID_UNARY_COUNT ? kNames[v] : "unary";
}
const char* binary_name(const braid_binary_op& op) {
  static constexpr const char* kNames[] = {"add",     "sub",   "mul",  "div",     "pow",          "maximum",
                                           "minimum", "equal", "less", "greater", "floor_divide", "mod"};
  static_assert(std::size(kNames) == BRAID_BINARY_COUNT);
  const int32_t v = enum_int(op);
  return v >= 0 && v < BRAID_BINARY_COUNT ? kNames[v] : "binary";
}

// Which elementwise ops the C API defines for integers: refused with BRAID_ERR_DTYPE before any
// promotion cast, the same on every device. It stays here although the plugins now say per call which
// integer kernels they have (plugin ABI 1.4 supports_call, asked at push, BRAID_ERR_UNSUPPORTED): it
// is the API's definition, not a backend's, and the rule for plugins without supports_call.
bool unary_allows_int(braid_unary_op op) {
  return op == BRAID_UNARY_NEG || op == BRAID_UNARY_ABS || op == BRAID_UNARY_RELU || op == BRAID_UNARY_SQUARE ||
         op == BRAID_UNARY_SIGN;
}

bool binary_allows_int(braid_binary_op op) { return op != BRAID_BINARY_DIV && op != BRAID_BINARY_POW; }

void check_op(const braid_binary_op& op, const char* name) {
  if (int32_t v = enum_int(op); v < 0 || v >= BRAID_BINARY_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, name, ": invalid braid_binary_op ", v);
}

// Call after check_op.
void check_binary(const braid_binary_op& op, braid_dtype dtype, const char* name) {
  if (!(dtype_is_float(dtype) || (dtype_is_int(dtype) && binary_allows_int(op))))
    fail(BRAID_ERR_DTYPE, name, ": no ", dtype_name(dtype), " version of this op");
}

// The dtype a binary op between tensors a and b computes in (call after check_op): PyTorch's result
// type, and true division of integers in float32 as braid_binary_scalar divides them.
braid_dtype binary_dtype(const braid_binary_op& op, const Tensor& a, const Tensor& b) {
  const braid_dtype common = result_type(a.dtype, a.shape.ndim == 0, b.dtype, b.shape.ndim == 0);
  return (dtype_is_integer(common) || common == BRAID_BOOL) && op == BRAID_BINARY_DIV ? BRAID_FLOAT32 : common;
}

// Two bools, as PyTorch computes them: ADD and MAXIMUM are logical or, MUL and MINIMUM logical and, the
// comparisons compare false < true; SUB, POW, FLOOR_DIVIDE and MOD are refused (PyTorch refuses bool
// subtraction). Computed in int32, where each result is 0 or 1, and cast back exactly.
TensorRef bool_binary(const braid_binary_op& bop, Tensor& a, Tensor& b) {
  braid_binary_op as = bop;
  switch (bop) {
    case BRAID_BINARY_ADD: as = BRAID_BINARY_MAXIMUM; break;  // 1 + 1 is true, not 2
    case BRAID_BINARY_MUL:
    case BRAID_BINARY_MAXIMUM:
    case BRAID_BINARY_MINIMUM:
    case BRAID_BINARY_EQUAL:
    case BRAID_BINARY_LESS:
    case BRAID_BINARY_GREATER: break;
    default:
      fail(BRAID_ERR_DTYPE, "binary: no bool version of ", binary_name(bop),
           " (cast to an integer dtype first; logical operations are add/maximum for or, mul/minimum for and)");
  }
  const TensorRef ia = braid::op::cast(&a, BRAID_INT32), ib = braid::op::cast(&b, BRAID_INT32);
  const TensorRef r = braid::op::binary(as, ia.get(), ib.get());
  return bool_from_zero_one(*r);
}

}  // namespace

void entry::unary(const braid_unary_op& uop, braid_tensor x, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op(unary_name(uop), BRAID_KOP_UNARY);
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
}

BRAID_API braid_status braid_unary(braid_unary_op uop, braid_tensor x, braid_tensor* out) {
  return guard("braid_unary", [&] { entry::unary(uop, x, out); });
}

void entry::binary(const braid_binary_op& bop, braid_tensor a, braid_tensor b, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op(binary_name(bop), BRAID_KOP_BINARY);
  Tensor& ta = op.operand(a, "a");
  Tensor& tb = op.operand(b, "b");
  check_op(bop, "binary");
  const braid_dtype dtype = binary_dtype(bop, ta, tb);
  if (dtype == BRAID_BOOL) {
    *out = bool_binary(bop, ta, tb).release();
    return;
  }
  check_binary(bop, dtype, "binary");
  Shape shape = broadcast_shapes(ta.shape, tb.shape, "binary");
  if (ta.dtype != dtype || tb.dtype != dtype) {
    // Operands of different dtypes (or integers divided) are cast to the common dtype first, as
    // PyTorch promotes: the casts are ops like braid_cast (autograd records them, so a gradient
    // reaches each operand in its own dtype), and this builder is dropped unpushed.
    TensorRef ca = ta.dtype != dtype ? braid::op::cast(&ta, dtype) : braid::op::retain(&ta);
    TensorRef cb = tb.dtype != dtype ? braid::op::cast(&tb, dtype) : braid::op::retain(&tb);
    *out = braid::op::binary(bop, ca.get(), cb.get()).release();
    return;
  }
  op.add_input_view(ta, broadcast_view(ta.view(), ta.shape, shape));
  op.add_input_view(tb, broadcast_view(tb.view(), tb.shape, shape));
  op.require_kernel(dtype);
  op.output(dtype, shape);
  op.call().i[0] = bop;
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_binary(braid_binary_op bop, braid_tensor a, braid_tensor b, braid_tensor* out) {
  return guard("braid_binary", [&] { entry::binary(bop, a, b, out); });
}

void entry::where(braid_tensor cond, braid_tensor a, braid_tensor b, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("where", BRAID_KOP_WHERE);
  Tensor& tc = op.operand(cond, "cond");
  Tensor& ta = op.operand(a, "a");
  Tensor& tb = op.operand(b, "b");
  const Shape shape = broadcast_shapes(broadcast_shapes(tc.shape, ta.shape, "where"), tb.shape, "where");
  const braid_dtype dtype = result_type(ta.dtype, ta.shape.ndim == 0, tb.dtype, tb.shape.ndim == 0);
  // The kernel selects within one numeric dtype. Storage dtypes select in the dtype that holds them
  // exactly (float32 for float16/bfloat16, int32 for uint8), then cast back; these casts, as
  // promotion's, are ops autograd records, and this builder is dropped unpushed.
  const braid_dtype exact = dtype == BRAID_UINT8 || dtype == BRAID_BOOL          ? BRAID_INT32
                            : dtype_is_floating(dtype) && !dtype_is_float(dtype) ? BRAID_FLOAT32
                                                                                 : dtype;
  if (exact != dtype) {
    const TensorRef ca = braid::op::cast(&ta, exact), cb = braid::op::cast(&tb, exact);
    const TensorRef r = braid::op::run(entry::where, &tc, ca.get(), cb.get());
    *out = (dtype == BRAID_BOOL ? bool_from_zero_one(*r) : braid::op::cast(r.get(), dtype)).release();
    return;
  }
  if (ta.dtype != dtype || tb.dtype != dtype) {
    const TensorRef ca = ta.dtype != dtype ? braid::op::cast(&ta, dtype) : braid::op::retain(&ta);
    const TensorRef cb = tb.dtype != dtype ? braid::op::cast(&tb, dtype) : braid::op::retain(&tb);
    *out = braid::op::run(entry::where, &tc, ca.get(), cb.get()).release();
    return;
  }
  if (tc.dtype != dtype) {
    // A condition of another dtype becomes (cond == 0) in the result's dtype, 1 or 0 exactly, with
    // the operands swapped: truncating it instead would make 0.5 false, and 2^32 false in int32.
    if (tc.dtype == BRAID_BOOL) {  // 1 or 0 already: cast exactly into the dtype the kernel selects in
      const TensorRef mask = braid::op::cast(&tc, dtype);
      *out = braid::op::run(entry::where, mask.get(), &ta, &tb).release();
      return;
    }
    TensorRef c = braid::op::retain(&tc);
    if (tc.dtype == BRAID_UINT8) c = braid::op::cast(&tc, BRAID_INT32);
    if (tc.dtype == BRAID_FLOAT16 || tc.dtype == BRAID_BFLOAT16) c = braid::op::cast(&tc, BRAID_FLOAT32);
    const TensorRef zero = braid::op::scalar(BRAID_BINARY_EQUAL, c.get(), 0.0);
    const TensorRef mask = zero->dtype != dtype ? braid::op::cast(zero.get(), dtype) : braid::op::retain(zero.get());
    *out = braid::op::run(entry::where, mask.get(), &tb, &ta).release();
    return;
  }
  op.add_input_view(tc, broadcast_view(tc.view(), tc.shape, shape));
  op.add_input_view(ta, broadcast_view(ta.view(), ta.shape, shape));
  op.add_input_view(tb, broadcast_view(tb.view(), tb.shape, shape));
  op.require_kernel(dtype);
  op.output(dtype, shape);
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_where(braid_tensor cond, braid_tensor a, braid_tensor b, braid_tensor* out) {
  return guard("braid_where", [&] { entry::where(cond, a, b, out); });
}

void entry::binary_scalar(const braid_binary_op& bop, braid_tensor x, double scalar, int32_t reverse,
                          braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  check_op(bop, "binary_scalar");
  // NumPy's and PyTorch's promotion: an integer tensor with a scalar that is not an integer (2.5,
  // inf, NaN), or divided (true division), computes in floating point, float32 as PyTorch's default
  // dtype; comparisons then compare exactly (x < 2.5 holds at 2) and give 1 or 0 in float32.
  Tensor& tx = checked_tensor(x, "x");
  // inf is no integer either (trunc(inf) == inf): x + inf is float32 inf, not a saturated integer.
  const bool whole = std::isfinite(scalar) && std::trunc(scalar) == scalar;
  // A bool x computes as NumPy's and PyTorch's default integer, int64 (True + 1 is 2), or as above.
  if (tx.dtype == BRAID_BOOL) {
    const TensorRef promoted = braid::op::cast(&tx, bop == BRAID_BINARY_DIV || !whole ? BRAID_FLOAT32 : BRAID_INT64);
    *out = braid::op::scalar(bop, promoted.get(), scalar, reverse != 0).release();
    return;
  }
  if (dtype_is_integer(tx.dtype) && (bop == BRAID_BINARY_DIV || !whole)) {
    const TensorRef promoted = braid::op::cast(&tx, BRAID_FLOAT32);
    *out = braid::op::scalar(bop, promoted.get(), scalar, reverse != 0).release();
    return;
  }
  // A whole number outside the integer dtype would be clamped by the kernel (x == 2^31 held for
  // int32 2^31 - 1): refused, as NumPy 2 refuses it (PyTorch wraps it; docs/OPS.md).
  if (dtype_is_int(tx.dtype)) {
    const double lo = tx.dtype == BRAID_INT32 ? -2147483648.0 : -9223372036854775808.0;
    const double hi = tx.dtype == BRAID_INT32 ? 2147483648.0 : 9223372036854775808.0;  // exclusive
    if (!(scalar >= lo && scalar < hi))
      fail(BRAID_ERR_INVALID_ARGUMENT, "binary_scalar: the scalar ", scalar, " does not fit ", dtype_name(tx.dtype),
           " (cast x to a wider dtype first)");
  }
  OpBuilder op(binary_name(bop), BRAID_KOP_BINARY_SCALAR);
  Tensor& a = op.input(x, "x");
  check_binary(bop, a.dtype, "binary_scalar");
  op.require_kernel(a.dtype);
  op.output(a.dtype, a.shape);
  op.call().i[0] = bop;
  op.call().i[1] = reverse != 0;
  op.call().f[0] = scalar;
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_binary_scalar(braid_binary_op bop, braid_tensor x, double scalar, int32_t reverse,
                                           braid_tensor* out) {
  return guard("braid_binary_scalar", [&] { entry::binary_scalar(bop, x, scalar, reverse, out); });
}
