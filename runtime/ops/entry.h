// The C++ entry points behind the public op functions of braid.h that code inside libbraid uses
// (gradients, optimizers, type promotion, the Trainer, graph replay, hardware measurements). Each
// entry::X does all of braid_X's work (validation, shape inference, the push, autograd's record) and
// throws braid::Error; braid_X is guard() around it. So the runtime never calls back through the C API:
// no thread-local error round trip, and an error keeps its type and message on its way up. Same
// parameters as braid_X (docs/ARCHITECTURE.md, "The C boundary"), enums by reference: a C caller's
// value is not yet validated when braid_X passes it on, and loading an out-of-range value as a C++
// enum would be undefined (core/dtype.h, enum_int).
#pragma once
#include <cstdint>

#include "braid.h"

namespace braid::entry {

void unary(const braid_unary_op& uop, braid_tensor x, braid_tensor* out);
void binary(const braid_binary_op& bop, braid_tensor a, braid_tensor b, braid_tensor* out);
void where(braid_tensor cond, braid_tensor a, braid_tensor b, braid_tensor* out);
void binary_scalar(const braid_binary_op& bop, braid_tensor x, double scalar, int32_t reverse, braid_tensor* out);
void compare(const braid_compare_op& cop, braid_tensor a, braid_tensor b, braid_tensor* out);
void compare_scalar(const braid_compare_op& cop, braid_tensor x, double scalar, braid_tensor* out);
void reshape(braid_tensor x, int32_t ndim, const int64_t* shape, braid_tensor* out);
void view(braid_tensor x, int64_t offset, int32_t ndim, const int64_t* shape, braid_tensor* out);
void slice(braid_tensor x, const int64_t* begin, const int64_t* end, const int64_t* step, braid_tensor* out);
void take(braid_tensor x, braid_tensor indices, int32_t axis, braid_tensor* out);
// take's gradient (internal: autograd's): dx of x_shape, dy's rows summed into the rows they were taken from.
void take_backward(braid_tensor dy, braid_tensor indices, const int64_t* x_shape, int32_t x_ndim, int32_t axis,
                   braid_tensor* dx);
void cast(braid_tensor x, const braid_dtype& dtype, braid_tensor* out);
void copy(braid_tensor x, braid_device device, braid_tensor* out);
void copy_into(braid_tensor src, braid_tensor dst);
void matmul(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b, braid_tensor* out);
// Internal (autocast's, and its gradient's): two bfloat16 or two float16 operands, a float32 product
// accumulated in float32, on a device whose backend has that MATMUL (plugin ABI 1.7).
void matmul_low(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b, braid_tensor* out);
void full(braid_context ctx, braid_device device, const braid_dtype& dtype, int32_t ndim, const int64_t* shape,
          double value, braid_tensor* out);
void reduce(const braid_reduce_op& rop, braid_tensor x, int32_t naxes, const int32_t* axes, int32_t keepdims,
            braid_tensor* out);
void conv2d(braid_tensor x, braid_tensor w, braid_tensor bias, const braid_conv2d_params* params, braid_tensor* out);
void conv2d_backward_data(braid_tensor dy, braid_tensor w, const int64_t* x_shape, const braid_conv2d_params* params,
                          braid_tensor* dx);
void conv2d_backward_weight(braid_tensor dy, braid_tensor x, const int64_t* w_shape, const braid_conv2d_params* params,
                            braid_tensor* dw);
void pool2d_backward(braid_tensor dy, braid_tensor x, const braid_pool2d_params* params, braid_tensor* dx);
void batch_norm_backward(braid_tensor dy, braid_tensor x, braid_tensor gamma, braid_tensor save_mean,
                         braid_tensor save_invstd, int32_t training, braid_tensor* dx, braid_tensor* dgamma,
                         braid_tensor* dbeta);
void softmax_cross_entropy_backward(braid_tensor logits, braid_tensor labels, braid_tensor dloss,
                                    braid_tensor* dlogits);
void sgd_update(braid_tensor w, braid_tensor g, double lr, double weight_decay);
void sgd_momentum_update(braid_tensor w, braid_tensor g, braid_tensor mom, double lr, double momentum,
                         double weight_decay);
void adam_update(braid_tensor w, braid_tensor g, braid_tensor m, braid_tensor v, const braid_adam_params* params);

}  // namespace braid::entry
