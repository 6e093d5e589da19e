// Layout and movement: reshape (a view), slice, transpose, concat, cast, and copies within and
// between devices.
#include <cstring>
#include <vector>

#include "core/trace_hook.h"
#include "ops/call.h"
#include "ops/copy.h"
#include "ops/entry.h"
#include "ops/op_builder.h"
#include "ops/shapes.h"
#include "tensor/recorder.h"

using namespace braid;

void entry::reshape(braid_tensor x, int32_t ndim, const int64_t* shape, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  Tensor& a = checked_tensor(x, "x");
  if (ndim < 0 || ndim > BRAID_MAX_DIMS) fail(BRAID_ERR_INVALID_ARGUMENT, "ndim ", ndim, " out of range");
  if (ndim > 0) require(shape, "shape");
  Shape s;
  s.ndim = ndim;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "only one dimension may be -1");
      infer = i;
    } else if (shape[i] < 0) {
      fail(BRAID_ERR_INVALID_ARGUMENT, "negative dimension ", shape[i]);
    } else {
      s[i] = shape[i];
      if (__builtin_mul_overflow(known, shape[i], &known))
        fail(BRAID_ERR_SHAPE, "cannot reshape ", a.shape.str(),
             ": the new shape has more elements than int64 can count");
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.shape.numel() % known != 0)
      fail(BRAID_ERR_SHAPE, "cannot reshape ", a.shape.str(), " with a -1 dimension into ", known, "-element parts");
    s[infer] = a.shape.numel() / known;
  }
  if (!s.fits()) fail(BRAID_ERR_SHAPE, "cannot reshape ", a.shape.str(), " into ", s.str(), ": too large");
  if (s.numel() != a.shape.numel())
    fail(BRAID_ERR_SHAPE, "cannot reshape ", a.shape.str(), " (", a.shape.numel(), " elements) into ", s.str());
  TensorRef y = view_tensor(a, s);
  if (const OpRecorder* recorder = a.ctx->recording.recorder()) recorder->reshape(*a.ctx, a, *y);
  if (TraceHook* hook = t_trace_hook) hook->reshaped(a, *y);
  *out = y.release();
}

BRAID_API braid_status braid_reshape(braid_tensor x, int32_t ndim, const int64_t* shape, braid_tensor* out) {
  return guard("braid_reshape", [&] { entry::reshape(x, ndim, shape, out); });
}

void entry::view(braid_tensor x, int64_t offset, int32_t ndim, const int64_t* shape, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  Tensor& a = checked_tensor(x, "x");
  require_computed(a, "view");
  const Shape s = Shape::from(ndim, shape, "shape");
  const int64_t n = a.shape.numel();
  if (offset < 0 || offset > n || s.numel() > n - offset)
    fail(BRAID_ERR_SHAPE, "view: elements ", offset, " .. ", offset, " + ", s.numel(), " of ", a.shape.str(), " (", n,
         " elements) are not all inside it");
  // Neither autograd nor a trace sees a view's writes and reads as ops, so one made while they record
  // would drop gradients or bind a part of a storage as a whole: the copy (braid_slice) is the op there.
  if (t_trace_hook != nullptr || (a.ctx->recording.any() && a.ctx->recording.on()))
    fail(BRAID_ERR_INVALID_STATE,
         "view: refused while this thread records autograd or traces a graph (views are not "
         "recorded); use braid_slice, a differentiable copy");
  *out = window_tensor(a, offset, s).release();
}

BRAID_API braid_status braid_view(braid_tensor x, int64_t offset, int32_t ndim, const int64_t* shape,
                                  braid_tensor* out) {
  return guard("braid_view", [&] { entry::view(x, offset, ndim, shape, out); });
}

void entry::slice(braid_tensor x, const int64_t* begin, const int64_t* end, const int64_t* step, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  Tensor& a = checked_tensor(x, "x");
  const int nd = a.shape.ndim;
  if (nd > 0) {
    require(begin, "begin");
    require(end, "end");
  }
  braid_buffer_view from = a.view();
  Shape s;
  s.ndim = nd;
  // Python/NumPy semantics for a positive step: a negative bound counts from the end, then both
  // bounds clamp to [0, dim] (x[2:100], x[-100:5] are not errors), and end <= begin is empty.
  // Clamping before subtracting keeps every step of the arithmetic inside int64 whatever the
  // caller passed (INT64_MIN, INT64_MAX).
  const auto clamp_bound = [](int64_t v, int64_t dim) {
    if (v < 0) v = v < -dim ? 0 : v + dim;
    return v > dim ? dim : v;
  };
  for (int i = 0; i < nd; ++i) {
    const int64_t dim = a.shape[i];
    const int64_t st = step ? step[i] : 1;
    if (st <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "slice: step[", i, "] is ", st, "; steps must be positive");
    const int64_t b = clamp_bound(begin[i], dim);
    const int64_t e = clamp_bound(end[i], dim);
    s[i] = e > b ? (e - b - 1) / st + 1 : 0;
    // An empty axis reads nothing: its offset stays at the start so the view never points past x.
    if (s[i] > 0) from.byte_offset += static_cast<uint64_t>(b * from.strides[i]) * dtype_size(a.dtype);
    from.shape[i] = s[i];
    // With two or more elements st < dim, so the product stays in range; with fewer the stride is
    // never used and a huge step (INT64_MAX) must not overflow it.
    if (s[i] > 1) from.strides[i] *= st;
  }
  TensorRef y = new_tensor(*a.ctx, a.device(), a.dtype, s);
  push_copy_kernel("slice", a, from, *y, y->view());
  *out = y.release();
}

BRAID_API braid_status braid_slice(braid_tensor x, const int64_t* begin, const int64_t* end, const int64_t* step,
                                   braid_tensor* out) {
  return guard("braid_slice", [&] { entry::slice(x, begin, end, step, out); });
}

BRAID_API braid_status braid_transpose(braid_tensor x, const int32_t* perm, braid_tensor* out) {
  return guard("braid_transpose", [&] {
    require(out, "out");
    *out = nullptr;
    Tensor& a = checked_tensor(x, "x");
    const int nd = a.shape.ndim;
    if (nd > 0) require(perm, "perm");
    braid_buffer_view src = a.view(), from = src;
    Shape s;
    s.ndim = nd;
    uint32_t seen = 0;
    for (int i = 0; i < nd; ++i) {
      int32_t p = normalize_axis(perm[i], nd, "transpose");
      if (seen & (1u << p)) fail(BRAID_ERR_INVALID_ARGUMENT, "transpose: perm repeats axis ", p);
      seen |= 1u << p;
      s[i] = a.shape[p];
      from.shape[i] = src.shape[p];
      from.strides[i] = src.strides[p];
    }
    TensorRef y = new_tensor(*a.ctx, a.device(), a.dtype, s);
    push_copy_kernel("transpose", a, from, *y, y->view());
    *out = y.release();
  });
}

BRAID_API braid_status braid_concat(int32_t count, const braid_tensor* xs, int32_t axis, braid_tensor* out) {
  return guard("braid_concat", [&] {
    require(out, "out");
    *out = nullptr;
    if (count <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "concat: count must be positive");
    require(xs, "xs");
    std::vector<Tensor*> parts;
    for (int32_t i = 0; i < count; ++i) parts.push_back(&checked_tensor(xs[i], cat("xs[", i, "]").c_str()));
    Tensor& first = *parts[0];
    int32_t ax = normalize_axis(axis, first.shape.ndim, "concat");
    Shape s = first.shape;
    s[ax] = 0;
    // Parts of different dtypes are promoted as torch.cat promotes them (docs/OPS.md); each part's
    // copy into the result casts it.
    braid_dtype dtype = first.dtype;
    for (Tensor* p : parts) {
      dtype = promote_types(dtype, p->dtype);
      if (p->ctx != first.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "concat: operands belong to different contexts");
      if (&p->device() != &first.device()) fail(BRAID_ERR_DEVICE, "concat: inputs are on different devices");
      if (p->shape.ndim != first.shape.ndim) fail(BRAID_ERR_SHAPE, "concat: inputs have different ranks");
      for (int d = 0; d < s.ndim; ++d)
        if (d != ax && p->shape[d] != first.shape[d])
          fail(BRAID_ERR_SHAPE, "concat: shapes ", first.shape.str(), " and ", p->shape.str(), " differ off axis ", ax);
      if (__builtin_add_overflow(s[ax], p->shape[ax], &s[ax]))
        fail(BRAID_ERR_SHAPE, "concat: the result has more elements along axis ", ax, " than int64 can count");
    }
    if (!s.fits()) fail(BRAID_ERR_SHAPE, "concat: the result ", s.str(), " has more elements than int64 can count");
    // A part the backend cannot cast straight into the result (Vulkan's integers into float16) is cast
    // first, as braid_cast does it (through float64 or float32); casts are ops autograd records.
    std::vector<TensorRef> cast_parts;
    for (Tensor*& p : parts)
      if (!casts_directly(first.device(), p->dtype, dtype)) {
        cast_parts.push_back(braid::op::cast(p, dtype));
        p = cast_parts.back().get();
      }
    TensorRef y = new_tensor(*first.ctx, first.device(), dtype, s);
    braid_buffer_view to = y->view();
    int64_t offset = 0;
    for (Tensor* p : parts) {
      braid_buffer_view part = to;
      part.shape[ax] = p->shape[ax];
      part.byte_offset += static_cast<uint64_t>(offset * to.strides[ax]) * dtype_size(dtype);
      if (p->shape.numel() > 0) push_copy_kernel("concat", *p, p->view(), *y, part);
      offset += p->shape[ax];
    }
    *out = y.release();
  });
}

void entry::cast(braid_tensor x, const braid_dtype& dtype, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  Tensor& a = checked_tensor(x, "x");
  check_dtype(dtype, "dtype");
  if (dtype == BRAID_BOOL && a.dtype != BRAID_BOOL) {  // NumPy's bool(x): nonzero (NaN too) is true
    entry::compare_scalar(BRAID_COMPARE_NOT_EQUAL, x, 0.0, out);
    return;
  }
  // A pair the backend has no kernel for (Vulkan's float16/bfloat16 <-> integers) goes through a
  // float, so that the result is the one rounding or truncation a direct cast makes: float32 holds
  // a 16-bit float and a uint8 exactly, and an integer rounds through it to float16 as it would
  // directly (float32 is exact to 2^24, and float16 ends at 65504); int32 and int64 go to bfloat16
  // through float64 (exact for int32; an int64 past 2^53 rounds twice), on a device with it.
  Device& dev = a.device();
  if (!casts_directly(dev, a.dtype, dtype)) {
    const bool wide_first = dtype == BRAID_BFLOAT16 && (a.dtype == BRAID_INT32 || a.dtype == BRAID_INT64);
    const braid_dtype order[2] = {wide_first ? BRAID_FLOAT64 : BRAID_FLOAT32,
                                  wide_first ? BRAID_FLOAT32 : BRAID_FLOAT64};
    for (braid_dtype mid : order)
      if (dev.supports(BRAID_KOP_COPY, mid) && casts_directly(dev, a.dtype, mid) && casts_directly(dev, mid, dtype)) {
        const TensorRef wide = braid::op::cast(&a, mid);
        *out = braid::op::cast(wide.get(), dtype).release();
        return;
      }
  }
  TensorRef y = new_tensor(*a.ctx, dev, dtype, a.shape);
  push_copy_kernel("cast", a, a.view(), *y, y->view());
  *out = y.release();
}

BRAID_API braid_status braid_cast(braid_tensor x, braid_dtype dtype, braid_tensor* out) {
  return guard("braid_cast", [&] { entry::cast(x, dtype, out); });
}

void entry::copy(braid_tensor x, braid_device device, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  Tensor& a = checked_tensor(x, "x");
  Device& to = a.ctx->device(device, "device");
  TensorRef y = new_tensor(*a.ctx, to, a.dtype, a.shape);
  if (a.bytes() > 0 && &to == &a.device()) {
    push_copy_kernel("copy", a, a.view(), *y, y->view());
  } else {
    if (a.bytes() > 0) push_range_copy("copy", a, 0, *y, 0, a.shape.numel());
    // A byte copy, or none (an empty tensor, whose copy is still an op autograd sees, as PyTorch's
    // x[3:3].to(device) is: an empty part of split_and_load must pass its gradient on too).
    if (const OpRecorder* recorder = a.ctx->recording.recorder()) recorder->device_copy(*a.ctx, a, *y);
  }
  *out = y.release();
}

BRAID_API braid_status braid_copy(braid_tensor x, braid_device device, braid_tensor* out) {
  return guard("braid_copy", [&] { entry::copy(x, device, out); });
}

void entry::copy_into(braid_tensor src, braid_tensor dst) {
  Tensor& a = checked_tensor(src, "src");
  Tensor& b = checked_tensor(dst, "dst");
  if (a.ctx != b.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "src and dst belong to different contexts");
  if (!(a.shape == b.shape)) fail(BRAID_ERR_SHAPE, "src shape ", a.shape.str(), " differs from dst ", b.shape.str());
  if (a.dtype != b.dtype) fail(BRAID_ERR_DTYPE, "src and dst dtypes differ; use braid_cast");
  if (a.bytes() == 0) return;
  if (a.storage == b.storage) {
    if (a.offset == b.offset) return;  // the same elements (a reshape, or the tensor itself)
    // Two windows of one storage (braid_view): apart, one kernel copies; overlapping, through a copy.
    if (a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes()) {
      const TensorRef tmp = braid::op::run(entry::copy, &a, a.storage->device->index);
      copy_into(tmp.get(), &b);
      return;
    }
  }
  if (&a.device() == &b.device())
    push_copy_kernel("copy_into", a, a.view(), b, b.view());
  else {
    push_range_copy("copy", a, 0, b, 0, a.shape.numel());
    // A byte copy, not a kernel, so autograd does not see it: b's old history no longer made b.
    if (const OpRecorder* r = b.ctx->recording.recorder()) r->overwritten(*b.ctx, b);
  }
}

BRAID_API braid_status braid_copy_into(braid_tensor src, braid_tensor dst) {
  return guard("braid_copy_into", [&] { entry::copy_into(src, dst); });
}
