// Shape inference shared by the ops (and, later, by graph mode): pure functions that validate
// operand shapes and return the result's, throwing BRAID_ERR_SHAPE with the reason.
#pragma once
#include <cstdint>

#include "braid_backend.h"
#include "core/shape.h"

namespace braid {

// NumPy broadcasting of a and b.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// A contiguous tensor's view stretched to `to` (stride 0 on broadcast axes).
braid_buffer_view broadcast_view(const braid_buffer_view& v, const Shape& from, const Shape& to);
// A view with an explicit shape and row-major strides (same memory, e.g. keepdims shapes).
braid_buffer_view reshaped_view(braid_buffer_view v, const Shape& shape);
// Reduced axes as a bitmask (naxes == 0: all axes).
uint32_t reduce_mask(int32_t ndim, int32_t naxes, const int32_t* axes, const char* op);
// The result's shape, with size 1 on reduced axes (keepdims) or without them.
Shape reduce_shape(const Shape& in, uint32_t mask, bool keepdims);

struct Conv2dGeometry {
  int64_t n, c, h, w, k, r, s, p, q;
};
Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& w, int32_t stride_h, int32_t stride_w, int32_t pad_h,
                               int32_t pad_w);
// Output size of one spatial axis of a pooling window; throws when the window does not fit.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, const char* op);

}  // namespace braid
