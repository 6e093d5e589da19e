// Encoders of the reductions and the network kernels: reduce, argmax, softmax, matmul and the
// convolutions (one gemm shader, shaders/gemm.comp), pooling, softmax cross-entropy and batch norm,
// with their backward kernels.
#include <cmath>

#include "encoder.h"

namespace braid::vk::enc {
namespace {

using plugin::dtype_name;
using plugin::dtype_size;

// The most elements one workgroup reduces per output (REDUCE): 4M passed on lavapipe, 8M did not.
constexpr int64_t kMaxReduceCount = int64_t{1} << 22;

// The gemm shader (shaders/gemm.comp): a workgroup per `rows` (16 for matmul, 32 for the convolution
// variants: shaders.list's -DROWS) x 256 columns of the output, z = batch.
constexpr int64_t kGemmCols = 256;
KernelResult dispatch_gemm(Enc& e, Recorder& r, ShaderId s, int64_t M, int64_t N, int64_t batch, int64_t rows) {
  const int64_t gx = (N + kGemmCols - 1) / kGemmCols, gy = (M + rows - 1) / rows;
  if (gx > 65535 || gy > 65535 || batch > 65535) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: gemm grid too large");
  if (M > INT32_MAX || N > INT32_MAX)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: gemm over more than 2^31 rows or columns");
  return e.dispatch(r, s, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(batch));
}

// Convolution sizes for the implicit-gemm modes of shaders/gemm.comp: extra[3..15].
void conv_sizes(Enc& e, const braid_buffer_view& x, const braid_buffer_view& w, const braid_buffer_view& y,
                const int64_t* i) {
  const int64_t v[] = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], y.shape[2], y.shape[3],
                       w.shape[2], w.shape[3], i[0],       i[1],       i[2],       i[3]};
  for (int k = 0; k < 13; ++k) e.p.extra[3 + k] = static_cast<uint32_t>(v[k]);
}

}  // namespace

KernelResult reduce(const braid_kernel_call& c, Recorder& r) {
  const auto &in = c.inputs[0], &out = c.outputs[0];
  Enc e;
  e.shape(out);
  e.operand(0, in);
  e.operand(6, out);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  // The reduced dimensions, adjacent ones merged where their strides allow (a contiguous run becomes one
  // dimension): the shader pays a division and a modulo per reduced dimension and element, none for
  // a single one. The element order, hence the sum, is the same.
  uint32_t rnd = 0;
  int64_t count = 1, size[8] = {}, stride[8] = {};
  int last = -2;
  for (int d = 0; d < in.ndim; ++d) {
    if (!((c.i[1] >> d) & 1)) continue;
    if (rnd > 0 && last == d - 1 && stride[rnd - 1] == in.strides[d] * in.shape[d]) {
      size[rnd - 1] *= in.shape[d];
      stride[rnd - 1] = in.strides[d];
    } else {
      size[rnd] = in.shape[d];
      stride[rnd] = in.strides[d];
      ++rnd;
    }
    last = d;
    count *= in.shape[d];
  }
  // One workgroup reduces each output's elements. On lavapipe a workgroup that runs that long is cut
  // short without an error (a sum of 2^23 ones came out as 262136 in float32, 65514 in float64), so
  // larger reductions are refused rather than answered wrongly. Splitting them over workgroups needs a
  // second pass and a scratch buffer: docs/VULKAN.md lists it as a limitation.
  if (count > kMaxReduceCount)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: a reduction over more than " + std::to_string(kMaxReduceCount) +
                                           " elements per output (" + std::to_string(count) +
                                           ") is not supported on this backend yet; reduce in parts");
  for (uint32_t k = 0; k < rnd; ++k) {
    if (stride[k] > INT32_MAX || stride[k] < INT32_MIN)
      return fail(BRAID_ERR_UNSUPPORTED, "vulkan: a stride exceeds 32 bits");
    e.p.extra[2 + k] = static_cast<uint32_t>(size[k]);
    e.p.extra[10 + k] = static_cast<uint32_t>(static_cast<int32_t>(stride[k]));
  }
  e.p.extra[0] = static_cast<uint32_t>(count);
  e.p.extra[1] = rnd;
  const bool sg = r.physical().subgroup_arithmetic;
  if (in.dtype == BRAID_FLOAT64) return dispatch_groups(e, r, ShaderId::reduce_f64);  // tree only
  if (in.dtype == BRAID_INT32) return dispatch_groups(e, r, ShaderId::reduce_i32);
  if (in.dtype == BRAID_INT64) return dispatch_groups(e, r, ShaderId::reduce_i64);
  return dispatch_groups(e, r, sg ? ShaderId::reduce_f32_subgroup : ShaderId::reduce_f32);
}

KernelResult argmax(const braid_kernel_call& c, Recorder& r) {
  const auto &in = c.inputs[0], &out = c.outputs[0];
  const int axis = static_cast<int>(c.i[0]);
  Enc e;
  e.shape(out);
  e.operand(0, in);
  e.operand(6, out);
  e.p.extra[0] = static_cast<uint32_t>(in.shape[axis]);
  e.p.extra[1] = static_cast<uint32_t>(static_cast<int32_t>(in.strides[axis]));
  if (in.dtype == BRAID_INT32) return dispatch_groups(e, r, ShaderId::argmax_i32);
  if (in.dtype == BRAID_INT64) return dispatch_groups(e, r, ShaderId::argmax_i64);
  return dispatch_groups(e, r, pick(in.dtype, ShaderId::argmax_f32, ShaderId::argmax_f64));
}

KernelResult softmax(const braid_kernel_call& c, Recorder& r) {
  const auto &in = c.inputs[0], &out = c.outputs[0];
  const int axis = static_cast<int>(c.i[0]);
  braid_buffer_view rows = in;
  rows.shape[axis] = 1;
  Enc e;
  e.shape(rows);
  e.operand(0, in);
  e.operand(6, out);
  e.p.i[1] = static_cast<int32_t>(c.i[1]);
  e.p.extra[0] = static_cast<uint32_t>(in.shape[axis]);
  e.p.extra[1] = static_cast<uint32_t>(static_cast<int32_t>(in.strides[axis]));
  e.p.extra[2] = static_cast<uint32_t>(static_cast<int32_t>(out.strides[axis]));
  return dispatch_groups(e, r, pick(in.dtype, ShaderId::softmax_f32, ShaderId::softmax_f64));
}

KernelResult matmul(const braid_kernel_call& c, Recorder& r) {
  const auto &a = c.inputs[0], &b = c.inputs[1], &y = c.outputs[0];
  const bool ta = c.i[0] != 0, tb = c.i[1] != 0;
  if (a.ndim < 2 || b.ndim < 2 || y.ndim < 2)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: matmul needs 2-D or 3-D views");
  auto at = [](const braid_buffer_view& v, int from_end) { return v.strides[v.ndim - from_end]; };
  const int64_t M = y.shape[y.ndim - 2], N = y.shape[y.ndim - 1];
  const int64_t K = ta ? a.shape[a.ndim - 2] : a.shape[a.ndim - 1];
  const int64_t B = y.ndim == 3 ? y.shape[0] : 1;
  Enc e;
  e.operand(0, a);
  e.operand(1, b);
  e.operand(6, y);
  auto s32 = [&e](int64_t v) {
    if (v > INT32_MAX || v < INT32_MIN) e.error = "a stride exceeds 32 bits";
    return static_cast<int32_t>(v);
  };
  e.p.strides[0] = s32(a.ndim == 3 ? a.strides[0] : 0);
  e.p.strides[1] = s32(ta ? at(a, 1) : at(a, 2));
  e.p.strides[2] = s32(ta ? at(a, 2) : at(a, 1));
  e.p.strides[8] = s32(b.ndim == 3 ? b.strides[0] : 0);
  e.p.strides[9] = s32(tb ? at(b, 1) : at(b, 2));
  e.p.strides[10] = s32(tb ? at(b, 2) : at(b, 1));
  e.p.strides[48] = s32(y.ndim == 3 ? y.strides[0] : 0);
  e.p.strides[49] = s32(at(y, 2));
  e.p.strides[50] = s32(at(y, 1));
  e.p.extra[0] = static_cast<uint32_t>(M);
  e.p.extra[1] = static_cast<uint32_t>(N);
  e.p.extra[2] = static_cast<uint32_t>(K);
  e.p.n = static_cast<uint32_t>(M * N);
  if (M == 0 || N == 0 || B == 0) return ok();
  if (K == 0) {  // an empty sum: zeros
    Enc z;
    z.shape(y);
    z.operand(6, y);
    return z.dispatch_flat(r, pick(y.dtype, ShaderId::fill_f32, ShaderId::fill_f64));
  }
  // b read as vec4s: unit column stride, and every row start (and the view's start) on 4 elements.
  const bool vec4 =
      N % 4 == 0 && e.p.strides[10] == 1 && e.p.strides[9] % 4 == 0 && e.p.strides[8] % 4 == 0 && e.p.off[1] % 4 == 0;
  const ShaderId id = y.dtype == BRAID_FLOAT64 ? (vec4 ? ShaderId::matmul_f64_vec4 : ShaderId::matmul_f64)
                                               : (vec4 ? ShaderId::matmul_f32_vec4 : ShaderId::matmul_f32);
  return dispatch_gemm(e, r, id, M, N, B, 16);
}

KernelResult conv2d(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &w = c.inputs[1], &y = c.outputs[0];
  if (c.i[0] <= 0 || c.i[1] <= 0) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: conv2d needs positive strides");
  // Implicit gemm: M = K output channels, columns = N P Q output pixels, summed over C R S.
  const int64_t M = w.shape[0], cols = y.shape[0] * y.shape[2] * y.shape[3], sum = w.shape[1] * w.shape[2] * w.shape[3];
  if (M == 0 || cols == 0) return ok();
  Enc e;
  e.operand(0, x);
  e.operand(1, w);
  if (c.num_inputs >= 3) e.operand(2, c.inputs[2]);
  e.operand(6, y);
  e.p.i[0] = c.num_inputs >= 3 ? 1 : 0;
  e.p.extra[0] = static_cast<uint32_t>(M);
  e.p.extra[1] = static_cast<uint32_t>(cols);
  e.p.extra[2] = static_cast<uint32_t>(sum);
  conv_sizes(e, x, w, y, c.i);
  return dispatch_gemm(e, r, pick(x.dtype, ShaderId::conv2d_f32, ShaderId::conv2d_f64), M, cols, 1, 32);
}

KernelResult pool2d(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &y = c.outputs[0];
  Enc e;
  e.shape(y);
  e.operand(0, x);
  e.operand(6, y);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  const int64_t v[] = {x.shape[2], x.shape[3], c.i[1], c.i[2], c.i[3], c.i[4], c.i[5], c.i[6]};
  for (int k = 0; k < 8; ++k) e.p.extra[k] = static_cast<uint32_t>(v[k]);
  return e.dispatch_flat(r, pick(x.dtype, ShaderId::pool2d_f32, ShaderId::pool2d_f64));
}

KernelResult softmax_ce(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &labels = c.inputs[1], &y = c.outputs[0];
  if (labels.dtype != BRAID_INT32 && labels.dtype != BRAID_INT64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: softmax_cross_entropy labels must be int32 or int64");
  Enc e;
  e.operand(0, x);
  e.operand(1, labels);
  e.operand(6, y);
  const bool wide = labels.dtype == BRAID_INT64;
  if (wide) e.p.off[1] *= 2;  // the shader reads int64 labels as pairs of 32-bit words
  e.p.n = static_cast<uint32_t>(x.shape[0]);
  e.p.extra[0] = static_cast<uint32_t>(x.shape[1]);
  e.p.extra[1] = static_cast<uint32_t>(static_cast<int32_t>(x.strides[1]));
  e.p.extra[2] = wide ? 1 : 0;
  uint32_t gx = std::min<uint32_t>(e.p.n, 65535), gy = gx ? (e.p.n + gx - 1) / gx : 0;
  return e.dispatch(r, pick(x.dtype, ShaderId::softmax_ce_f32, ShaderId::softmax_ce_f64), gx, gy, 1,
                    "a label is outside [0, K)");
}

KernelResult batch_norm(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &y = c.outputs[0];
  if (x.ndim < 2) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: batch_norm needs a channel axis");
  Enc e;
  for (int k = 0; k < 5; ++k) e.operand(k, c.inputs[k]);
  for (int k = 0; k < c.num_outputs && k < 3; ++k) e.operand(6 + k, c.outputs[k]);
  e.p.n = static_cast<uint32_t>(x.shape[1]);
  e.attr(0, c.f[0]);
  e.attr(1, c.f[1]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  e.p.i[1] = c.num_outputs;
  uint32_t rnd = 0;
  int64_t count = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d == 1) continue;
    e.p.extra[2 + rnd] = static_cast<uint32_t>(x.shape[d]);
    e.p.extra[10 + rnd] = static_cast<uint32_t>(static_cast<int32_t>(x.strides[d]));
    e.p.extra[18 + rnd] = static_cast<uint32_t>(static_cast<int32_t>(y.strides[d]));
    count *= x.shape[d];
    ++rnd;
  }
  if (count > INT32_MAX) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: batch_norm over more than 2^31 elements");
  e.p.extra[0] = static_cast<uint32_t>(count);
  e.p.extra[1] = rnd;
  return dispatch_groups(e, r, pick(x.dtype, ShaderId::batch_norm_f32, ShaderId::batch_norm_f64));
}

// ---- backward kernels (ABI 1.1) ----

KernelResult softmax_ce_bwd(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &labels = c.inputs[1], &dy = c.outputs[0];
  if (labels.dtype != BRAID_INT32 && labels.dtype != BRAID_INT64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: softmax_cross_entropy labels must be int32 or int64");
  Enc e;
  e.operand(0, x);
  e.operand(1, labels);
  e.operand(2, c.inputs[2]);
  e.operand(6, dy);
  const bool wide = labels.dtype == BRAID_INT64;
  if (wide) e.p.off[1] *= 2;  // the shader reads int64 labels as pairs of 32-bit words
  e.p.n = static_cast<uint32_t>(x.shape[0]);
  e.p.extra[0] = static_cast<uint32_t>(x.shape[1]);
  e.p.extra[2] = wide ? 1 : 0;
  uint32_t gx = std::min<uint32_t>(e.p.n, 65535), gy = gx ? (e.p.n + gx - 1) / gx : 0;
  return e.dispatch(r, pick(x.dtype, ShaderId::softmax_ce_bwd_f32, ShaderId::softmax_ce_bwd_f64), gx, gy, 1,
                    "a label is outside [0, K)");
}

KernelResult pool2d_bwd(const braid_kernel_call& c, Recorder& r) {
  const auto &dy = c.inputs[0], &x = c.inputs[1], &dx = c.outputs[0];
  const int64_t kh = c.i[1], kw = c.i[2];
  // A stride of 0 means the kernel size, as in the CPU reference.
  const int64_t sh = c.i[3] > 0 ? c.i[3] : std::max<int64_t>(1, kh),
                sw = c.i[4] > 0 ? c.i[4] : std::max<int64_t>(1, kw);
  Enc e;
  e.shape(dx);
  e.operand(0, dy);
  e.operand(1, x);
  e.operand(6, dx);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  const int64_t v[] = {x.shape[2], x.shape[3], kh, kw, sh, sw, c.i[5], c.i[6], dy.shape[2], dy.shape[3]};
  for (int k = 0; k < 10; ++k) e.p.extra[k] = static_cast<uint32_t>(v[k]);
  return e.dispatch_flat(r, pick(x.dtype, ShaderId::pool2d_bwd_f32, ShaderId::pool2d_bwd_f64));
}

KernelResult conv2d_bwd_data(const braid_kernel_call& c, Recorder& r) {
  const auto &dy = c.inputs[0], &w = c.inputs[1], &dx = c.outputs[0];
  if (c.i[0] <= 0 || c.i[1] <= 0) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: conv2d backward needs positive strides");
  // Implicit gemm: M = C input channels, columns = N H W input pixels, summed over K R S.
  const int64_t M = dx.shape[1], cols = dx.shape[0] * dx.shape[2] * dx.shape[3],
                sum = w.shape[0] * w.shape[2] * w.shape[3];
  if (M == 0 || cols == 0) return ok();
  Enc e;
  e.operand(0, dy);
  e.operand(1, w);
  e.operand(6, dx);
  e.p.extra[0] = static_cast<uint32_t>(M);
  e.p.extra[1] = static_cast<uint32_t>(cols);
  e.p.extra[2] = static_cast<uint32_t>(sum);
  conv_sizes(e, dx, w, dy, c.i);
  return dispatch_gemm(e, r, pick(dx.dtype, ShaderId::conv2d_bwd_data_f32, ShaderId::conv2d_bwd_data_f64), M, cols, 1,
                       32);
}

KernelResult conv2d_bwd_weight(const braid_kernel_call& c, Recorder& r) {
  const auto &dy = c.inputs[0], &x = c.inputs[1], &dw = c.outputs[0];
  if (c.i[0] <= 0 || c.i[1] <= 0) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: conv2d backward needs positive strides");
  if (dy.shape[0] * dy.shape[2] * dy.shape[3] > INT32_MAX)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: conv2d weight gradient over more than 2^31 terms");
  // Implicit gemm: M = K output channels, columns = C R S taps, summed over N P Q.
  const int64_t M = dw.shape[0], cols = dw.shape[1] * dw.shape[2] * dw.shape[3],
                sum = dy.shape[0] * dy.shape[2] * dy.shape[3];
  if (M == 0 || cols == 0) return ok();
  Enc e;
  e.operand(0, dy);
  e.operand(1, x);
  e.operand(6, dw);
  if (cols < 64 && sum > 4096) {
    // Too few columns to give the gemm more than one workgroup (which would run the whole sum alone):
    // one workgroup per dw element instead, each summing its terms in parallel.
    e.shape(dw);
    const int64_t v[] = {dy.shape[0], dy.shape[2], dy.shape[3], x.shape[2], x.shape[3], c.i[0], c.i[1], c.i[2], c.i[3]};
    for (int k = 0; k < 9; ++k) e.p.extra[k] = static_cast<uint32_t>(v[k]);
    return dispatch_groups(e, r,
                           pick(dw.dtype, ShaderId::conv2d_bwd_weight_taps_f32, ShaderId::conv2d_bwd_weight_taps_f64));
  }
  e.p.extra[0] = static_cast<uint32_t>(M);
  e.p.extra[1] = static_cast<uint32_t>(cols);
  e.p.extra[2] = static_cast<uint32_t>(sum);
  conv_sizes(e, x, dw, dy, c.i);
  return dispatch_gemm(e, r, pick(dw.dtype, ShaderId::conv2d_bwd_weight_f32, ShaderId::conv2d_bwd_weight_f64), M, cols,
                       1, 32);
}

KernelResult batch_norm_bwd(const braid_kernel_call& c, Recorder& r) {
  const auto& x = c.inputs[1];
  if (x.ndim < 2) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: batch_norm backward needs a channel axis");
  Enc e;
  e.shape(x);
  for (int k = 0; k < 5; ++k) e.operand(k, c.inputs[k]);
  for (int k = 0; k < c.num_outputs && k < 3; ++k) e.operand(6 + k, c.outputs[k]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  e.p.i[1] = c.num_outputs;
  const int64_t count = x.shape[1] > 0 ? numel(x) / x.shape[1] : 0;
  e.p.extra[0] = static_cast<uint32_t>(count);
  e.p.n = static_cast<uint32_t>(x.shape[1]);
  return dispatch_groups(e, r, pick(x.dtype, ShaderId::batch_norm_bwd_f32, ShaderId::batch_norm_bwd_f64));
}

}  // namespace braid::vk::enc
