// Comparisons with bool results (braid_compare, braid_compare_scalar): composed of braid_binary's
// EQUAL, LESS and GREATER, which give 1 or 0 in the compared dtype, and one exact cast of that 1 or 0
// into the bool's storage (docs/OPS.md, "Booleans").
#include <cmath>

#include "ops/call.h"
#include "ops/copy.h"
#include "ops/entry.h"

using namespace braid;

namespace {

void check_op(const braid_compare_op& cop, const char* name) {
  if (int32_t v = enum_int(cop); v < 0 || v >= BRAID_COMPARE_COUNT)
    fail(BRAID_ERR_INVALID_ARGUMENT, name, ": invalid braid_compare_op ", v);
}

// The dtype a comparison computes in: the storage dtypes have no comparison kernels, so bool and uint8
// compare in int32 and the 16-bit floats in float32 (each exact there).
braid_dtype compares_in(braid_dtype d) {
  if (d == BRAID_BOOL || d == BRAID_UINT8) return BRAID_INT32;
  if (d == BRAID_FLOAT16 || d == BRAID_BFLOAT16) return BRAID_FLOAT32;
  return d;
}

TensorRef cast_to(Tensor& t, braid_dtype d) { return t.dtype == d ? op::retain(&t) : op::cast(&t, d); }

// a op b as 1 or 0 in their dtype, from the three comparisons braid_binary has. NOT_EQUAL is 1 - EQUAL
// (NaN != NaN holds); LESS_EQUAL is LESS + EQUAL, never 2 (NaN <= x is 0 + 0).
template <class Cmp>
TensorRef zero_one(const braid_compare_op& cop, Cmp cmp) {
  switch (enum_int(cop)) {
    case BRAID_COMPARE_EQUAL: return cmp(BRAID_BINARY_EQUAL);
    case BRAID_COMPARE_NOT_EQUAL: return op::scalar(BRAID_BINARY_SUB, cmp(BRAID_BINARY_EQUAL).get(), 1.0, true);
    case BRAID_COMPARE_LESS: return cmp(BRAID_BINARY_LESS);
    case BRAID_COMPARE_GREATER: return cmp(BRAID_BINARY_GREATER);
    case BRAID_COMPARE_LESS_EQUAL: return op::add(cmp(BRAID_BINARY_LESS).get(), cmp(BRAID_BINARY_EQUAL).get());
    default: return op::add(cmp(BRAID_BINARY_GREATER).get(), cmp(BRAID_BINARY_EQUAL).get());
  }
}

}  // namespace

void entry::compare(const braid_compare_op& cop, braid_tensor a, braid_tensor b, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  check_op(cop, "compare");
  Tensor& ta = checked_tensor(a, "a");
  Tensor& tb = checked_tensor(b, "b");
  // Each operand in the promoted dtype first (a float64 0-d beside float16 rounds to float16, as in
  // PyTorch), then in the dtype that compares it exactly.
  const braid_dtype common = result_type(ta.dtype, ta.shape.ndim == 0, tb.dtype, tb.shape.ndim == 0);
  const braid_dtype dtype = compares_in(common);
  const TensorRef pa = cast_to(ta, common), pb = cast_to(tb, common);
  const TensorRef ca = cast_to(*pa, dtype), cb = cast_to(*pb, dtype);
  const TensorRef r = zero_one(cop, [&](braid_binary_op bop) { return op::binary(bop, ca.get(), cb.get()); });
  *out = bool_from_zero_one(*r).release();
}

BRAID_API braid_status braid_compare(braid_compare_op cop, braid_tensor a, braid_tensor b, braid_tensor* out) {
  return guard("braid_compare", [&] { entry::compare(cop, a, b, out); });
}

void entry::compare_scalar(const braid_compare_op& cop, braid_tensor x, double scalar, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  check_op(cop, "compare_scalar");
  Tensor& tx = checked_tensor(x, "x");
  if (tx.dtype == BRAID_FLOAT16 || tx.dtype == BRAID_BFLOAT16) {
    // The scalar in x's own dtype, as NumPy and PyTorch take it (float16(0.1) == 0.1 holds): filled in
    // float64 where the device has it (one rounding) and cast, then compared as two tensors.
    Device& dev = tx.device();
    const braid_dtype wide = dev.supports(BRAID_KOP_FILL, BRAID_FLOAT64) && dev.supports(BRAID_KOP_COPY, BRAID_FLOAT64)
                                 ? BRAID_FLOAT64
                                 : BRAID_FLOAT32;
    const TensorRef s = op::run(entry::full, tx.ctx, dev.index, wide, 0, nullptr, scalar);
    const TensorRef same = op::cast(s.get(), tx.dtype);
    *out = op::compare(cop, &tx, same.get()).release();
    return;
  }
  const TensorRef c = cast_to(tx, compares_in(tx.dtype));
  const int32_t o = enum_int(cop);
  if (dtype_is_int(c->dtype)) {
    // Integers compare with the scalar exactly, in their own dtype: a fraction moves to the whole number
    // that gives the same answer (x < 2.5 is x < 3, x <= 2.5 is x <= 2), and what no element can equal
    // or reach gives one answer for all (NaN; x == 2.5; int32 x < 2^31), as NumPy 2 compares Python
    // numbers. (Promoting to float32 instead would round int32 16777217 to 16777216.)
    bool constant = false, value = false;
    if (std::isnan(scalar) || (std::isfinite(scalar) && std::trunc(scalar) != scalar &&
                               (o == BRAID_COMPARE_EQUAL || o == BRAID_COMPARE_NOT_EQUAL))) {
      constant = true, value = o == BRAID_COMPARE_NOT_EQUAL;
    } else {
      if (std::isfinite(scalar) && std::trunc(scalar) != scalar)
        scalar = o == BRAID_COMPARE_LESS || o == BRAID_COMPARE_GREATER_EQUAL ? std::ceil(scalar) : std::floor(scalar);
      const bool i32 = c->dtype == BRAID_INT32;
      const double lo = i32 ? -2147483648.0 : -9223372036854775808.0;
      const double hi = i32 ? 2147483648.0 : 9223372036854775808.0;  // exclusive
      if (scalar >= hi || scalar < lo) {
        const bool above = scalar >= hi;  // every element is below the scalar, or (else) above it
        constant = true;
        value =
            o == BRAID_COMPARE_NOT_EQUAL || (above ? o == BRAID_COMPARE_LESS || o == BRAID_COMPARE_LESS_EQUAL
                                                   : o == BRAID_COMPARE_GREATER || o == BRAID_COMPARE_GREATER_EQUAL);
      }
    }
    if (constant) {
      *out = op::run(entry::full, tx.ctx, tx.storage->device->index, BRAID_BOOL, tx.shape.ndim, tx.shape.dims.data(),
                     value ? 1.0 : 0.0)
                 .release();
      return;
    }
  }
  const TensorRef r = zero_one(cop, [&](braid_binary_op bop) { return op::scalar(bop, c.get(), scalar); });
  *out = bool_from_zero_one(*r).release();
}

BRAID_API braid_status braid_compare_scalar(braid_compare_op cop, braid_tensor x, double scalar, braid_tensor* out) {
  return guard("braid_compare_scalar", [&] { entry::compare_scalar(cop, x, scalar, out); });
}
