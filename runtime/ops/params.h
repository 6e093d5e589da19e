// Reading the application's op parameter structs (struct_size-aware) and resolving their defaults;
// shared by the forward ops and their backward ops so both see the same geometry.
#pragma once
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/in_struct.h"
#include "core/shape.h"

namespace braid {

// Reads a params struct honouring the caller's struct_size: fields it does not cover keep defaults.
template <class T>
T read_params(const T* in, T defaults, const char* what) {
  return read_in_struct(in, defaults, what);
}

inline braid_conv2d_params conv2d_params(const braid_conv2d_params* params) {
  braid_conv2d_params p = read_params<braid_conv2d_params>(params, BRAID_CONV2D_PARAMS_INIT, "params");
  for (auto* v : {&p.stride[0], &p.stride[1]})
    if (*v == 0) *v = 1;
  return p;
}

// conv2d's attributes in a kernel call, for the forward op and both gradients (abi/braid_backend.h):
// i[0..1] the stride, i[2..3] the padding, each (height, width).
inline void put_conv2d_params(braid_kernel_call& c, const braid_conv2d_params& p) {
  c.i[0] = p.stride[0], c.i[1] = p.stride[1], c.i[2] = p.padding[0], c.i[3] = p.padding[1];
}

// pool2d's attributes in a kernel call, for the forward op and its gradient (abi/braid_backend.h):
// i[0] the kind, i[1..2] the window, i[3..4] the stride, i[5..6] the padding.
inline void put_pool2d_params(braid_kernel_call& c, const braid_pool2d_params& p) {
  c.i[0] = p.kind, c.i[1] = p.kernel[0], c.i[2] = p.kernel[1], c.i[3] = p.stride[0], c.i[4] = p.stride[1];
  c.i[5] = p.padding[0], c.i[6] = p.padding[1];
}

// Pooling params with global pooling and stride 0 resolved against x's shape (N,C,H,W).
inline braid_pool2d_params pool2d_params(const braid_pool2d_params* params, const Shape& x) {
  braid_pool2d_params p = read_params<braid_pool2d_params>(params, BRAID_POOL2D_PARAMS_INIT, "params");
  if (int32_t kind = enum_int(p.kind); kind != BRAID_POOL_MAX && kind != BRAID_POOL_AVG)
    fail(BRAID_ERR_INVALID_ARGUMENT, "pool2d: invalid braid_pool_kind ", kind);
  if (p.global) {
    p.kernel[0] = static_cast<int32_t>(x[2]);
    p.kernel[1] = static_cast<int32_t>(x[3]);
    p.stride[0] = p.stride[1] = 1;
    p.padding[0] = p.padding[1] = 0;
  }
  for (int i = 0; i < 2; ++i)
    if (p.stride[i] == 0) p.stride[i] = p.kernel[i];
  return p;
}

}  // namespace braid
