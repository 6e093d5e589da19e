// Backward ops of the neural-network ops whose gradients are kernels of their own (plugin ABI 1.1):
// conv2d data and weight gradients, pooling, batch norm, softmax cross-entropy. Autograd calls them;
// so may an application. Validation mirrors the forward ops.
#include "ops/entry.h"
#include "ops/op_builder.h"
#include "ops/params.h"
#include "ops/shapes.h"

using namespace braid;

namespace {
Shape shape4(const int64_t* dims, const char* what) {
  require(dims, what);
  for (int i = 0; i < 4; ++i)
    if (dims[i] < 0) fail(BRAID_ERR_INVALID_ARGUMENT, what, "[", i, "] is negative");
  return Shape::of({dims, 4});
}

void require_shape(const Tensor& t, const Shape& want, const char* op, const char* what) {
  if (!(t.shape == want))
    fail(BRAID_ERR_SHAPE, op, ": ", what, " must have shape ", want.str(), ", got ", t.shape.str());
}
}  // namespace

void entry::conv2d_backward_data(braid_tensor dy, braid_tensor w, const int64_t* x_shape,
                                 const braid_conv2d_params* params, braid_tensor* dx) {
  require(dx, "dx");
  *dx = nullptr;
  braid_conv2d_params p = conv2d_params(params);
  OpBuilder op("conv2d_backward_data", BRAID_KOP_CONV2D_BWD_DATA);
  Tensor& tdy = op.input(dy, "dy");
  Tensor& tw = op.input(w, "w");
  require_float(tdy, op.name(), "dy");
  require_same_dtype(tdy, tw, op.name());
  Shape xs = shape4(x_shape, "x_shape");
  require_shape(tdy, conv2d_geometry(xs, tw.shape, p).output(), op.name(), "dy");
  op.require_kernel(tdy.dtype);
  op.output(tdy.dtype, xs);
  put_conv2d_params(op.call(), p);
  op.push();
  *dx = op.release_output(0);
}

BRAID_API braid_status braid_conv2d_backward_data(braid_tensor dy, braid_tensor w, const int64_t* x_shape,
                                                  const braid_conv2d_params* params, braid_tensor* dx) {
  return guard("braid_conv2d_backward_data", [&] { entry::conv2d_backward_data(dy, w, x_shape, params, dx); });
}

void entry::conv2d_backward_weight(braid_tensor dy, braid_tensor x, const int64_t* w_shape,
                                   const braid_conv2d_params* params, braid_tensor* dw) {
  require(dw, "dw");
  *dw = nullptr;
  braid_conv2d_params p = conv2d_params(params);
  OpBuilder op("conv2d_backward_weight", BRAID_KOP_CONV2D_BWD_WEIGHT);
  Tensor& tdy = op.input(dy, "dy");
  Tensor& tx = op.input(x, "x");
  require_float(tdy, op.name(), "dy");
  require_same_dtype(tdy, tx, op.name());
  Shape ws = shape4(w_shape, "w_shape");
  require_shape(tdy, conv2d_geometry(tx.shape, ws, p).output(), op.name(), "dy");
  op.require_kernel(tdy.dtype);
  op.output(tdy.dtype, ws);
  put_conv2d_params(op.call(), p);
  op.push();
  *dw = op.release_output(0);
}

BRAID_API braid_status braid_conv2d_backward_weight(braid_tensor dy, braid_tensor x, const int64_t* w_shape,
                                                    const braid_conv2d_params* params, braid_tensor* dw) {
  return guard("braid_conv2d_backward_weight", [&] { entry::conv2d_backward_weight(dy, x, w_shape, params, dw); });
}

void entry::pool2d_backward(braid_tensor dy, braid_tensor x, const braid_pool2d_params* params, braid_tensor* dx) {
  require(dx, "dx");
  *dx = nullptr;
  OpBuilder op("pool2d_backward", BRAID_KOP_POOL2D_BWD);
  Tensor& tdy = op.input(dy, "dy");
  Tensor& tx = op.input(x, "x");
  require_float(tx, op.name(), "x");
  require_same_dtype(tdy, tx, op.name());
  if (tx.shape.ndim != 4) fail(BRAID_ERR_SHAPE, op.name(), ": x must be N,C,H,W, got ", tx.shape.str());
  braid_pool2d_params p = pool2d_params(params, tx.shape);
  require_shape(tdy, pool2d_output(tx.shape, p, op.name()), op.name(), "dy");
  op.require_kernel(tx.dtype);
  op.output(tx.dtype, tx.shape);
  put_pool2d_params(op.call(), p);
  op.push();
  *dx = op.release_output(0);
}

BRAID_API braid_status braid_pool2d_backward(braid_tensor dy, braid_tensor x, const braid_pool2d_params* params,
                                             braid_tensor* dx) {
  return guard("braid_pool2d_backward", [&] { entry::pool2d_backward(dy, x, params, dx); });
}

void entry::batch_norm_backward(braid_tensor dy, braid_tensor x, braid_tensor gamma, braid_tensor save_mean,
                                braid_tensor save_invstd, int32_t training, braid_tensor* dx, braid_tensor* dgamma,
                                braid_tensor* dbeta) {
  require(dx, "dx");
  *dx = nullptr;
  if (dgamma) *dgamma = nullptr;
  if (dbeta) *dbeta = nullptr;
  OpBuilder op("batch_norm_backward", BRAID_KOP_BATCH_NORM_BWD);
  Tensor& tdy = op.input(dy, "dy");
  Tensor& tx = op.input(x, "x");
  require_float(tx, op.name(), "x");
  require_same_dtype(tdy, tx, op.name());
  if (tx.shape.ndim != 2 && tx.shape.ndim != 4)
    fail(BRAID_ERR_SHAPE, op.name(), ": x must be N,C or N,C,H,W, got ", tx.shape.str());
  require_shape(tdy, tx.shape, op.name(), "dy");
  const int64_t c = tx.shape[1];
  const char* names[3] = {"gamma", "save_mean", "save_invstd"};
  braid_tensor handles[3] = {gamma, save_mean, save_invstd};
  for (int i = 0; i < 3; ++i) {
    Tensor& t = op.input(handles[i], names[i]);
    require_shape(t, Shape::of({&c, 1}), op.name(), names[i]);
    require_same_dtype(t, tx, op.name());
  }
  op.require_kernel(tx.dtype);
  op.output(tx.dtype, tx.shape);
  op.output(tx.dtype, Shape::of({&c, 1}));
  op.output(tx.dtype, Shape::of({&c, 1}));
  op.call().i[0] = training != 0;
  op.push();
  *dx = op.release_output(0);
  if (dgamma) *dgamma = op.release_output(1);
  if (dbeta) *dbeta = op.release_output(2);
}

BRAID_API braid_status braid_batch_norm_backward(braid_tensor dy, braid_tensor x, braid_tensor gamma,
                                                 braid_tensor save_mean, braid_tensor save_invstd, int32_t training,
                                                 braid_tensor* dx, braid_tensor* dgamma, braid_tensor* dbeta) {
  return guard("braid_batch_norm_backward",
               [&] { entry::batch_norm_backward(dy, x, gamma, save_mean, save_invstd, training, dx, dgamma, dbeta); });
}

void entry::softmax_cross_entropy_backward(braid_tensor logits, braid_tensor labels, braid_tensor dloss,
                                           braid_tensor* dlogits) {
  require(dlogits, "dlogits");
  *dlogits = nullptr;
  OpBuilder op("softmax_cross_entropy_backward", BRAID_KOP_SOFTMAX_CE_BWD);
  Tensor& tl = op.input(logits, "logits");
  Tensor& ty = op.input(labels, "labels");
  Tensor& td = op.input(dloss, "dloss");
  require_float(tl, op.name(), "logits");
  require_same_dtype(tl, td, op.name());
  if (!dtype_is_int(ty.dtype)) fail(BRAID_ERR_DTYPE, "labels must be int32 or int64, not ", dtype_name(ty.dtype));
  if (tl.shape.ndim != 2) fail(BRAID_ERR_SHAPE, "logits must be N,K, got ", tl.shape.str());
  if (tl.shape[1] == 0) fail(BRAID_ERR_SHAPE, "logits have no classes");
  const int64_t n = tl.shape[0];
  require_shape(ty, Shape::of({&n, 1}), op.name(), "labels");
  require_shape(td, Shape::of({&n, 1}), op.name(), "dloss");
  op.require_kernel(tl.dtype);
  op.output(tl.dtype, tl.shape);
  op.push();
  *dlogits = op.release_output(0);
}

BRAID_API braid_status braid_softmax_cross_entropy_backward(braid_tensor logits, braid_tensor labels,
                                                            braid_tensor dloss, braid_tensor* dlogits) {
  return guard("braid_softmax_cross_entropy_backward",
               [&] { entry::softmax_cross_entropy_backward(logits, labels, dloss, dlogits); });
}
