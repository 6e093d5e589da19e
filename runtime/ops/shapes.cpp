#include "ops/shapes.h"

#include "core/error.h"

namespace braid {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  Shape out;
  out.ndim = std::max(a.ndim, b.ndim);
  for (int i = 0; i < out.ndim; ++i) {
    int ia = a.ndim - out.ndim + i, ib = b.ndim - out.ndim + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      fail(BRAID_ERR_SHAPE, op, ": shapes ", a.str(), " and ", b.str(), " do not broadcast (axis ", i, ": ", da, " vs ",
           db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

braid_buffer_view broadcast_view(const braid_buffer_view& v, const Shape& from, const Shape& to) {
  braid_buffer_view r = v;
  auto strides = from.contiguous_strides();
  r.ndim = to.ndim;
  for (int i = 0; i < to.ndim; ++i) {
    int j = from.ndim - to.ndim + i;
    r.shape[i] = to[i];
    r.strides[i] = (j < 0 || from[j] == 1) ? 0 : strides[static_cast<size_t>(j)];
  }
  return r;
}

braid_buffer_view reshaped_view(braid_buffer_view v, const Shape& shape) {
  auto strides = shape.contiguous_strides();
  v.ndim = shape.ndim;
  for (int i = 0; i < shape.ndim; ++i) {
    v.shape[i] = shape[i];
    v.strides[i] = strides[static_cast<size_t>(i)];
  }
  return v;
}

uint32_t reduce_mask(int32_t ndim, int32_t naxes, const int32_t* axes, const char* op) {
  if (naxes < 0 || naxes > BRAID_MAX_DIMS) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": naxes ", naxes, " out of range");
  if (naxes == 0) return ndim == 0 ? 0u : (1u << ndim) - 1;
  if (!axes) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": axes is NULL");
  if (ndim == 0) {  // as PyTorch: a 0-d tensor takes axis 0 (or -1), once, and reduces to itself
    if (naxes > 1) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": axis 0 given twice for a 0-d tensor");
    normalize_axis(axes[0], 1, op);
    return 0u;
  }
  uint32_t mask = 0;
  for (int i = 0; i < naxes; ++i) {
    int32_t a = normalize_axis(axes[i], ndim, op);
    if (mask & (1u << a)) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": axis ", axes[i], " given twice");
    mask |= 1u << a;
  }
  return mask;
}

Shape reduce_shape(const Shape& in, uint32_t mask, bool keepdims) {
  Shape out;
  for (int i = 0; i < in.ndim; ++i) {
    if (mask & (1u << i)) {
      if (keepdims) out[out.ndim++] = 1;
    } else {
      out[out.ndim++] = in[i];
    }
  }
  return out;
}

Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& w, const braid_conv2d_params& params) {
  const int64_t sh = params.stride[0], sw = params.stride[1], ph = params.padding[0], pw = params.padding[1];
  if (x.ndim != 4) fail(BRAID_ERR_SHAPE, "conv2d: x must be N,C,H,W, got ", x.str());
  if (w.ndim != 4) fail(BRAID_ERR_SHAPE, "conv2d: w must be K,C,R,S, got ", w.str());
  if (sh <= 0 || sw <= 0 || ph < 0 || pw < 0)
    fail(BRAID_ERR_INVALID_ARGUMENT, "conv2d: stride must be positive and padding non-negative");
  if (x[1] != w[1]) fail(BRAID_ERR_SHAPE, "conv2d: x has ", x[1], " channels but w expects ", w[1]);
  Conv2dGeometry g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], 0, 0};
  if (g.h + 2 * ph < g.r || g.w + 2 * pw < g.s)
    fail(BRAID_ERR_SHAPE, "conv2d: kernel ", g.r, "x", g.s, " is larger than the padded input ", g.h + 2 * ph, "x",
         g.w + 2 * pw);
  g.p = (g.h + 2 * ph - g.r) / sh + 1;
  g.q = (g.w + 2 * pw - g.s) / sw + 1;
  return g;
}

namespace {
// Output size of one spatial axis of a pooling window.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, const char* op) {
  if (kernel <= 0 || stride <= 0 || pad < 0)
    fail(BRAID_ERR_INVALID_ARGUMENT, op, ": kernel and stride must be positive, padding non-negative");
  if (2 * pad > kernel) fail(BRAID_ERR_INVALID_ARGUMENT, op, ": padding ", pad, " exceeds half the kernel ", kernel);
  if (in + 2 * pad < kernel)
    fail(BRAID_ERR_SHAPE, op, ": window ", kernel, " is larger than the padded input ", in + 2 * pad);
  return (in + 2 * pad - kernel) / stride + 1;
}
}  // namespace

Shape pool2d_output(const Shape& x, const braid_pool2d_params& p, const char* op) {
  const int64_t dims[4] = {x[0], x[1], pooled_size(x[2], p.kernel[0], p.stride[0], p.padding[0], op),
                           pooled_size(x[3], p.kernel[1], p.stride[1], p.padding[1], op)};
  return Shape::of(dims);
}

}  // namespace braid
