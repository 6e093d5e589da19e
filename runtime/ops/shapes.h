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

// conv2d's sizes: x is N,C,H,W, w is K,C,R,S, the output N,K,P,Q.
struct Conv2dGeometry {
  int64_t n, c, h, w, k, r, s, p, q;
  Shape output() const {
    const int64_t dims[4] = {n, k, p, q};
    return Shape::of(dims);
  }
};
Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& w, const braid_conv2d_params& params);
// pool2d's output N,C,P,Q for x (N,C,H,W) and resolved params; throws when the window does not fit.
Shape pool2d_output(const Shape& x, const braid_pool2d_params& params, const char* op);

}  // namespace braid
