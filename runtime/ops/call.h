// The ops as the runtime calls them (gradient code, so that backward goes through validation and the
// engine like any op; type promotion, which casts and then runs the op): the C++ entry points of
// ops/entry.h with owned results.
#pragma once
#include <initializer_list>
#include <vector>

#include "core/error.h"
#include "ops/entry.h"
#include "tensor/tensor.h"

namespace braid::op {

// Runs an entry point whose last parameter is its one output and owns the result.
template <class F, class... Args>
inline TensorRef run(F f, Args... args) {
  braid_tensor y = nullptr;
  f(args..., &y);
  return TensorRef(y);
}
inline Tensor* h(const TensorRef& t) { return t.get(); }
// Another reference to an existing tensor (gradients are never written in place, so sharing is safe).
inline TensorRef retain(Tensor* t) {
  t->refs.fetch_add(1, std::memory_order_relaxed);
  return TensorRef(t);
}

inline TensorRef unary(braid_unary_op o, Tensor* x) { return run(entry::unary, o, x); }
inline TensorRef binary(braid_binary_op o, Tensor* a, Tensor* b) { return run(entry::binary, o, a, b); }
inline TensorRef scalar(braid_binary_op o, Tensor* x, double s, bool reverse = false) {
  return run(entry::binary_scalar, o, x, s, reverse);
}
inline TensorRef mul(Tensor* a, Tensor* b) { return binary(BRAID_BINARY_MUL, a, b); }
inline TensorRef add(Tensor* a, Tensor* b) { return binary(BRAID_BINARY_ADD, a, b); }
inline TensorRef sub(Tensor* a, Tensor* b) { return binary(BRAID_BINARY_SUB, a, b); }
inline TensorRef div(Tensor* a, Tensor* b) { return binary(BRAID_BINARY_DIV, a, b); }
inline TensorRef reduce(braid_reduce_op o, Tensor* x, std::vector<int32_t> axes, bool keepdims) {
  return run(entry::reduce, o, x, int32_t(axes.size()), axes.data(), keepdims);
}
inline TensorRef reshape(Tensor* x, const Shape& s) { return run(entry::reshape, x, s.ndim, s.dims.data()); }
inline TensorRef matmul(Tensor* a, Tensor* b, bool ta, bool tb) { return run(entry::matmul, a, b, ta, tb); }
inline TensorRef cast(Tensor* x, braid_dtype d) { return run(entry::cast, x, d); }
inline TensorRef where(Tensor* cond, Tensor* a, Tensor* b) { return run(entry::where, cond, a, b); }
inline TensorRef compare(braid_compare_op o, Tensor* a, Tensor* b) { return run(entry::compare, o, a, b); }
inline TensorRef compare(braid_compare_op o, Tensor* x, double s) { return run(entry::compare_scalar, o, x, s); }
// A tensor of x's dtype and device, of shape s, filled with v. float16 and bfloat16 are storage types
// (casts only, no fill kernel on every backend): filled in float32 and cast.
inline TensorRef full_as(const Tensor& x, const Shape& s, double v) {
  const bool storage_only = x.dtype == BRAID_FLOAT16 || x.dtype == BRAID_BFLOAT16;
  TensorRef t = run(entry::full, x.ctx, x.storage->device->index, storage_only ? BRAID_FLOAT32 : x.dtype, s.ndim,
                    s.dims.data(), v);
  return storage_only ? cast(t.get(), x.dtype) : std::move(t);
}
// A tensor like x filled with v.
inline TensorRef full_like(const Tensor& x, double v) { return full_as(x, x.shape, v); }
inline void copy_into(Tensor* src, Tensor* dst) { entry::copy_into(src, dst); }

}  // namespace braid::op
