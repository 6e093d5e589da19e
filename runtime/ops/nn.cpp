// Neural-network ops: conv2d, pooling, batch norm, softmax, softmax cross-entropy, dropout.
#include <cmath>
#include <cstring>

#include "ops/amp.h"
#include "ops/call.h"
#include "ops/entry.h"
#include "ops/op_builder.h"
#include "ops/params.h"
#include "ops/shapes.h"

using namespace braid;

namespace {
void require_vector(const Tensor& t, int64_t c, braid_dtype dtype, const char* op, const char* what) {
  if (t.shape.ndim != 1 || t.shape[0] != c)
    fail(BRAID_ERR_SHAPE, op, ": ", what, " must have shape [", c, "], got ", t.shape.str());
  if (t.dtype != dtype) fail(BRAID_ERR_DTYPE, op, ": ", what, " must be ", dtype_name(dtype));
}
}  // namespace

void entry::conv2d(braid_tensor x, braid_tensor w, braid_tensor bias, const braid_conv2d_params* params,
                   braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  braid_conv2d_params p = conv2d_params(params);
  OpBuilder op("conv2d", BRAID_KOP_CONV2D);
  Tensor& tx = op.input(x, "x");
  Tensor& tw = op.input(w, "w");
  // Autocast: x and w rounded to its dtype, the convolution in float32 (the bias stays float32).
  if (autocast_op(tx, tw, out, [&](Tensor* rx, Tensor* rw) { return braid::op::run(entry::conv2d, rx, rw, bias, &p); }))
    return;
  require_float(tx, "conv2d", "x");
  require_same_dtype(tx, tw, "conv2d");
  Conv2dGeometry g = conv2d_geometry(tx.shape, tw.shape, p);
  if (bias) require_vector(op.input(bias, "bias"), g.k, tx.dtype, "conv2d", "bias");
  op.require_kernel(tx.dtype);
  op.output(tx.dtype, g.output());
  put_conv2d_params(op.call(), p);
  op.push();
  *out = op.release_output(0);
}

extern "C" {

BRAID_API braid_status braid_conv2d(braid_tensor x, braid_tensor w, braid_tensor bias,
                                    const braid_conv2d_params* params, braid_tensor* out) {
  return guard("braid_conv2d", [&] { entry::conv2d(x, w, bias, params, out); });
}

BRAID_API braid_status braid_pool2d(braid_tensor x, const braid_pool2d_params* params, braid_tensor* out) {
  return guard("braid_pool2d", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op("pool2d", BRAID_KOP_POOL2D);
    Tensor& tx = op.input(x, "x");
    require_float(tx, "pool2d", "x");
    if (tx.shape.ndim != 4) fail(BRAID_ERR_SHAPE, "pool2d: x must be N,C,H,W, got ", tx.shape.str());
    braid_pool2d_params p = pool2d_params(params, tx.shape);
    Shape y = pool2d_output(tx.shape, p, "pool2d");
    op.require_kernel(tx.dtype);
    op.output(tx.dtype, y);
    put_pool2d_params(op.call(), p);
    op.push();
    *out = op.release_output(0);
  });
}

BRAID_API braid_status braid_batch_norm(braid_tensor x, braid_tensor gamma, braid_tensor beta,
                                        braid_tensor running_mean, braid_tensor running_var,
                                        const braid_batch_norm_params* params, braid_tensor* out,
                                        braid_tensor* save_mean, braid_tensor* save_invstd) {
  return guard("braid_batch_norm", [&] {
    require(out, "out");
    *out = nullptr;
    if (save_mean) *save_mean = nullptr;
    if (save_invstd) *save_invstd = nullptr;
    braid_batch_norm_params p = read_params<braid_batch_norm_params>(params, BRAID_BATCH_NORM_PARAMS_INIT, "params");
    if (p.eps == 0) p.eps = 1e-5;
    if (p.momentum == 0) p.momentum = 0.1;
    // Written so that NaN, which every comparison rejects, fails the check too.
    if (!(p.eps > 0 && std::isfinite(p.eps)) || !(p.momentum >= 0 && p.momentum <= 1))
      fail(BRAID_ERR_INVALID_ARGUMENT, "batch_norm: eps must be positive and finite and momentum in [0, 1], not ",
           p.eps, " and ", p.momentum);
    OpBuilder op("batch_norm", BRAID_KOP_BATCH_NORM);
    Tensor& tx = op.input(x, "x");
    require_float(tx, "batch_norm", "x");
    if (tx.shape.ndim != 2 && tx.shape.ndim != 4)
      fail(BRAID_ERR_SHAPE, "batch_norm: x must be N,C or N,C,H,W, got ", tx.shape.str());
    int64_t c = tx.shape[1];
    const char* names[4] = {"gamma", "beta", "running_mean", "running_var"};
    braid_tensor handles[4] = {gamma, beta, running_mean, running_var};
    Tensor* params_t[4];
    for (int i = 0; i < 4; ++i) {
      params_t[i] = &op.input(handles[i], names[i]);
      require_vector(*params_t[i], c, tx.dtype, "batch_norm", names[i]);
    }
    if (p.training) {
      if (c > 0 && tx.shape.numel() / c < 2)  // no channel: nothing to normalise, an empty result
        fail(BRAID_ERR_SHAPE, "batch_norm: training needs more than one value per channel");
      op.mark_written(*params_t[2]);
      op.mark_written(*params_t[3]);
    }
    op.require_kernel(tx.dtype);
    op.output(tx.dtype, tx.shape);
    op.output(tx.dtype, Shape::of({&c, 1}));
    op.output(tx.dtype, Shape::of({&c, 1}));
    auto& call = op.call();
    call.f[0] = p.eps, call.f[1] = p.momentum, call.i[0] = p.training != 0;
    op.push();
    *out = op.release_output(0);
    if (save_mean) *save_mean = op.release_output(1);
    if (save_invstd) *save_invstd = op.release_output(2);
  });
}

BRAID_API braid_status braid_softmax(braid_tensor x, int32_t axis, int32_t log, braid_tensor* out) {
  return guard("braid_softmax", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op(log ? "log_softmax" : "softmax", BRAID_KOP_SOFTMAX);
    Tensor& tx = op.input(x, "x");
    require_float(tx, op.name(), "x");
    // A 0-d tensor takes axis 0 (or -1), as in PyTorch: the kernel sees it as one element along axis 0.
    const bool scalar = tx.shape.ndim == 0;
    constexpr int64_t kOne = 1;  // the [1] a 0-d tensor is viewed as, without a heap allocation per call
    const Shape one = Shape::of({&kOne, 1});
    int32_t ax = normalize_axis(axis, scalar ? 1 : tx.shape.ndim, op.name());
    op.require_kernel(tx.dtype);
    Tensor& y = op.output(tx.dtype, tx.shape);
    if (scalar) {
      op.call().inputs[0] = reshaped_view(op.call().inputs[0], one);
      op.call().outputs[0] = reshaped_view(y.view(), one);
    }
    op.call().i[0] = ax;
    op.call().i[1] = log != 0;
    op.push();
    *out = op.release_output(0);
  });
}

BRAID_API braid_status braid_softmax_cross_entropy(braid_tensor logits, braid_tensor labels, braid_tensor* out) {
  return guard("braid_softmax_cross_entropy", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op("softmax_cross_entropy", BRAID_KOP_SOFTMAX_CE);
    Tensor& tl = op.input(logits, "logits");
    Tensor& ty = op.input(labels, "labels");
    require_float(tl, op.name(), "logits");
    if (!dtype_is_int(ty.dtype)) fail(BRAID_ERR_DTYPE, "labels must be int32 or int64, not ", dtype_name(ty.dtype));
    if (tl.shape.ndim != 2) fail(BRAID_ERR_SHAPE, "logits must be N,K, got ", tl.shape.str());
    if (ty.shape.ndim != 1 || ty.shape[0] != tl.shape[0])
      fail(BRAID_ERR_SHAPE, "labels must have shape [", tl.shape[0], "], got ", ty.shape.str());
    if (tl.shape[1] == 0) fail(BRAID_ERR_SHAPE, "logits have no classes");
    op.require_kernel(tl.dtype);
    int64_t n = tl.shape[0];
    op.output(tl.dtype, Shape::of({&n, 1}));
    op.push();
    *out = op.release_output(0);
  });
}

BRAID_API braid_status braid_dropout(braid_tensor x, double p, braid_tensor* out, braid_tensor* mask) {
  return guard("braid_dropout", [&] {
    require(out, "out");
    *out = nullptr;
    if (mask) *mask = nullptr;
    OpBuilder op("dropout", BRAID_KOP_DROPOUT);
    Tensor& tx = op.input(x, "x");
    require_float(tx, "dropout", "x");
    // p = 1 drops everything: y is x * 0 and the mask all zero (as PyTorch); the kernels' threshold for
    // p >= 1 keeps nothing and their scale is 0, so no 0/0 is ever computed.
    if (!(p >= 0 && p <= 1)) fail(BRAID_ERR_INVALID_ARGUMENT, "dropout: p must be in [0, 1], got ", p);
    op.require_kernel(tx.dtype);
    op.output(tx.dtype, tx.shape);
    op.output(tx.dtype, tx.shape);
    op.call().f[0] = p;
    op.set_random_draw();
    op.push();
    *out = op.release_output(0);
    if (mask) *mask = op.release_output(1);
  });
}

}  // extern "C"
