// Encoders of the elementwise kernels: fill, arange, copies and casts, unary, binary, where, the
// fused chains of graph mode, the random generators, dropout and the optimizer updates.
#include <cmath>

#include "encoder.h"
#include "fused_codegen.h"

namespace braid::vk::enc {
namespace {

using plugin::dtype_name;
using plugin::dtype_size;

// The Philox key and counter of a random kernel: extra[0..3].
void philox_params(Enc& e, const braid_kernel_call& c) {
  put_u64(&e.p.extra[0], static_cast<uint64_t>(c.i[0]));
  put_u64(&e.p.extra[2], static_cast<uint64_t>(c.i[1]));
}

}  // namespace

KernelResult fill(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  const braid_dtype dt = c.outputs[0].dtype;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  e.attr(0, c.f[0]);
  if (dt == BRAID_UINT8) {
    e.p.extra[0] = to_u8(c.f[0]);
    return e.dispatch_flat(r, ShaderId::fill_u8);
  }
  if (is_int(dt)) {
    int_scalar(e, dt, c.f[0]);
    return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::fill_i32 : ShaderId::fill_i64);
  }
  return e.dispatch_flat(r, pick(dt, ShaderId::fill_f32, ShaderId::fill_f64));
}

KernelResult arange(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  e.attr(0, c.f[0]);
  e.attr(1, c.f[1]);
  const braid_dtype dt = c.outputs[0].dtype;
  if (is_int(dt)) {  // computed in double like the CPU backend, then converted
    if (!r.physical().float64) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: integer arange needs shaderFloat64");
    return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::arange_i32 : ShaderId::arange_i64);
  }
  return e.dispatch_flat(r, pick(dt, ShaderId::arange_f32, ShaderId::arange_f64));
}

KernelResult copy(const braid_kernel_call& c, Recorder& r) {
  const braid_dtype s = c.inputs[0].dtype, d = c.outputs[0].dtype;
  ShaderId id;
  auto is32 = [](braid_dtype t) { return t == BRAID_FLOAT32 || t == BRAID_INT32; };
  auto is64 = [](braid_dtype t) { return t == BRAID_FLOAT64 || t == BRAID_INT64; };
  if (s == d && is32(s))
    id = ShaderId::copy_u32;
  else if (s == d && is64(s))
    id = ShaderId::copy_u64;
  else if (s == BRAID_FLOAT32 && d == BRAID_INT32)
    id = ShaderId::copy_f32_i32;
  else if (s == BRAID_INT32 && d == BRAID_FLOAT32)
    id = ShaderId::copy_i32_f32;
  else if (s == BRAID_INT32 && d == BRAID_INT64)
    id = ShaderId::copy_i32_i64;
  else if (s == BRAID_INT64 && d == BRAID_INT32)
    id = ShaderId::copy_i64_i32;
  else if (s == BRAID_FLOAT32 && d == BRAID_INT64)
    id = ShaderId::copy_f32_i64;
  else if (s == BRAID_INT64 && d == BRAID_FLOAT32)
    id = ShaderId::copy_i64_f32;
  else if (s == BRAID_FLOAT64 && d == BRAID_FLOAT32)
    id = ShaderId::copy_f64_f32;
  else if (s == BRAID_FLOAT32 && d == BRAID_FLOAT64)
    id = ShaderId::copy_f32_f64;
  else if (s == BRAID_FLOAT64 && d == BRAID_INT32)
    id = ShaderId::copy_f64_i32;
  else if (s == BRAID_INT32 && d == BRAID_FLOAT64)
    id = ShaderId::copy_i32_f64;
  else if (s == BRAID_FLOAT64 && d == BRAID_INT64)
    id = ShaderId::copy_f64_i64;
  else if (s == BRAID_INT64 && d == BRAID_FLOAT64)
    id = ShaderId::copy_i64_f64;
  else if (r.physical().float16 && s == BRAID_FLOAT32 && d == BRAID_FLOAT16)
    id = ShaderId::copy_f32_f16;
  else if (r.physical().float16 && s == BRAID_FLOAT16 && d == BRAID_FLOAT32)
    id = ShaderId::copy_f16_f32;
  else if (r.physical().float16 && s == d && (s == BRAID_FLOAT16 || s == BRAID_BFLOAT16))
    id = ShaderId::copy_u16;
  else if (s == BRAID_UINT8 && d == BRAID_UINT8)
    id = ShaderId::copy_u8;  // uint8: words, shaders/copy_u8.comp
  else if (s == BRAID_FLOAT32 && d == BRAID_UINT8)
    id = ShaderId::copy_f32_u8;
  else if (s == BRAID_UINT8 && d == BRAID_FLOAT32)
    id = ShaderId::copy_u8_f32;
  else if (s == BRAID_INT32 && d == BRAID_UINT8)
    id = ShaderId::copy_i32_u8;
  else if (s == BRAID_UINT8 && d == BRAID_INT32)
    id = ShaderId::copy_u8_i32;
  else if (s == BRAID_INT64 && d == BRAID_UINT8)
    id = ShaderId::copy_i64_u8;
  else if (s == BRAID_UINT8 && d == BRAID_INT64)
    id = ShaderId::copy_u8_i64;
  else if (s == BRAID_FLOAT64 && d == BRAID_UINT8)
    id = ShaderId::copy_f64_u8;
  else if (s == BRAID_UINT8 && d == BRAID_FLOAT64)
    id = ShaderId::copy_u8_f64;
  else if (r.physical().float16 && s == BRAID_FLOAT64 && d == BRAID_FLOAT16)
    id = ShaderId::copy_f64_f16;
  else if (r.physical().float16 && s == BRAID_FLOAT16 && d == BRAID_FLOAT64)
    id = ShaderId::copy_f16_f64;
  else if (r.physical().float16 && s == BRAID_FLOAT32 && d == BRAID_BFLOAT16)
    id = ShaderId::copy_f32_bf16;
  else if (r.physical().float16 && s == BRAID_BFLOAT16 && d == BRAID_FLOAT32)
    id = ShaderId::copy_bf16_f32;
  else if (r.physical().float16 && s == BRAID_FLOAT64 && d == BRAID_BFLOAT16)
    id = ShaderId::copy_f64_bf16;
  else if (r.physical().float16 && s == BRAID_BFLOAT16 && d == BRAID_FLOAT64)
    id = ShaderId::copy_bf16_f64;
  else if (r.physical().float16 && s == BRAID_FLOAT16 && d == BRAID_BFLOAT16)
    id = ShaderId::copy_f16_bf16;
  else if (r.physical().float16 && s == BRAID_BFLOAT16 && d == BRAID_FLOAT16)
    id = ShaderId::copy_bf16_f16;
  else
    return fail(BRAID_ERR_UNSUPPORTED,
                std::string("vulkan: no copy kernel from ") + dtype_name(s) + " to " + dtype_name(d));
  if ((s == BRAID_FLOAT64 || d == BRAID_FLOAT64) && !r.physical().float64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: the device has no shaderFloat64");
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(6, c.outputs[0]);
  return e.dispatch_flat(r, id);
}

KernelResult unary(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  const braid_dtype dt = c.inputs[0].dtype;
  if (is_int(dt)) return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::unary_i32 : ShaderId::unary_i64);
  return e.dispatch_flat(r, pick(dt, ShaderId::unary_f32, ShaderId::unary_f64));
}

namespace {
// The error an integer binary kernel can report: floor_divide and mod by zero (int_elementwise.comp).
const char* int_error(const braid_kernel_call& c) {
  return c.i[0] == BRAID_BINARY_FLOOR_DIVIDE || c.i[0] == BRAID_BINARY_MOD ? "integer division by zero" : nullptr;
}
}  // namespace

KernelResult binary(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(1, c.inputs[1]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  const braid_dtype dt = c.inputs[0].dtype;
  if (is_int(dt))
    return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::binary_i32 : ShaderId::binary_i64, int_error(c));
  return e.dispatch_flat(r, pick(dt, ShaderId::binary_f32, ShaderId::binary_f64));
}

// Copies bits: one shader per element width, told only whether cond is a float (-0.0 is zero).
KernelResult where(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  for (int k = 0; k < 3; ++k) e.operand(k, c.inputs[k]);
  e.operand(6, c.outputs[0]);
  const braid_dtype dt = c.inputs[0].dtype;
  const bool wide = dt == BRAID_FLOAT64 || dt == BRAID_INT64, real = dt == BRAID_FLOAT32 || dt == BRAID_FLOAT64;
  return e.dispatch_flat(
      r, wide ? (real ? ShaderId::where_f64 : ShaderId::where_64) : (real ? ShaderId::where_f32 : ShaderId::where_32));
}

// TAKE copies bits (one shader per element width and index width); TAKE_BWD sums in T. Both read the
// index in the shader and report one out of range through the error word.
KernelResult take(const braid_kernel_call& c, Recorder& r) {
  const auto &x = c.inputs[0], &index = c.inputs[1], &y = c.outputs[0];
  if (index.dtype != BRAID_INT32 && index.dtype != BRAID_INT64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: take's indices must be int32 or int64");
  if (x.ndim != 3 || y.ndim != 3 || index.ndim != 1)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: take needs [outer, n, inner] views and an index [m]");
  const bool bwd = c.op == BRAID_KOP_TAKE_BWD, wide_index = index.dtype == BRAID_INT64;
  Enc e;
  e.operand(0, x);
  e.operand(1, index);
  e.operand(6, y);
  if (wide_index) e.p.off[1] *= 2;  // the shader reads int64 indices as pairs of 32-bit words
  const int64_t total = numel(y);
  if (total > INT32_MAX || numel(x) > INT32_MAX) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: take over 2^31 elements");
  e.p.n = static_cast<uint32_t>(total);
  e.p.extra[0] = static_cast<uint32_t>(bwd ? x.shape[1] : y.shape[1]);  // m
  e.p.extra[1] = static_cast<uint32_t>(bwd ? y.shape[1] : x.shape[1]);  // n
  e.p.extra[2] = static_cast<uint32_t>(x.shape[2]);                     // inner
  ShaderId id;
  if (bwd) {
    id = x.dtype == BRAID_FLOAT64 ? (wide_index ? ShaderId::take_bwd_f64_i64 : ShaderId::take_bwd_f64)
                                  : (wide_index ? ShaderId::take_bwd_f32_i64 : ShaderId::take_bwd_f32);
  } else {
    const bool wide = dtype_size(x.dtype) == 8;
    id = wide ? (wide_index ? ShaderId::take_64_i64 : ShaderId::take_64)
              : (wide_index ? ShaderId::take_32_i64 : ShaderId::take_32);
  }
  return e.dispatch_flat(r, id, "an index is out of range");
}

KernelResult binary_scalar(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  e.p.i[1] = static_cast<int32_t>(c.i[1]);
  e.attr(0, c.f[0]);
  const braid_dtype dt = c.inputs[0].dtype;
  if (is_int(dt)) {
    int_scalar(e, dt, c.f[0]);
    return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::binary_scalar_i32 : ShaderId::binary_scalar_i64,
                           int_error(c));
  }
  return e.dispatch_flat(r, pick(dt, ShaderId::binary_scalar_f32, ShaderId::binary_scalar_f64));
}

// FUSED_ELEMENTWISE: the program's own shader (fused_codegen.h), generated and compiled on its first
// run on the device and cached there; its scalars are parameters, so programs that differ only in
// them share the shader.
KernelResult fused(const braid_kernel_call& c, Recorder& r) {
  plugin::FusedProgram program;
  if (!program.decode(c)) return fail(BRAID_ERR_INVALID_ARGUMENT, "vulkan: fused_elementwise: invalid program");
  const braid_dtype dtype = c.outputs[0].dtype;
  std::string error;
  const VkPipeline pipeline = r.device().generated_pipeline(
      program.key(dtype),
      [&](std::string& why) { return compile_compute_shader(fused_glsl(program, dtype), "fused_elementwise", why); },
      error);
  if (pipeline == VK_NULL_HANDLE) return fail(BRAID_ERR_KERNEL, "vulkan: fused_elementwise: " + error);
  Enc e;
  e.shape(c.outputs[0]);
  for (int j = 0; j < program.inputs; ++j) e.operand(j, c.inputs[j]);
  e.operand(6, c.outputs[0]);
  for (int s = 0; s < 8; ++s) e.attr(s, c.f[s]);
  return e.dispatch_flat(r, pipeline);
}

KernelResult random_uniform(const braid_kernel_call& c, Recorder& r) {
  if (!r.physical().float64) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: random_uniform needs shaderFloat64");
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  philox_params(e, c);
  put_double(&e.p.extra[4], c.f[0]);
  put_double(&e.p.extra[6], c.f[1]);
  return e.dispatch_flat(r, pick(c.outputs[0].dtype, ShaderId::random_uniform_f32, ShaderId::random_uniform_f64));
}

KernelResult random_normal(const braid_kernel_call& c, Recorder& r) {
  if (!r.physical().float64) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: random_normal needs shaderFloat64");
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  philox_params(e, c);
  put_double(&e.p.extra[4], c.f[0]);
  put_double(&e.p.extra[6], c.f[1]);
  return e.dispatch_flat(r, pick(c.outputs[0].dtype, ShaderId::random_normal_f32, ShaderId::random_normal_f64));
}

KernelResult dropout(const braid_kernel_call& c, Recorder& r) {
  if (!r.physical().float64) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: dropout needs shaderFloat64");
  const double p = c.f[0];
  const uint64_t thr = p <= 0.0 ? 0 : p >= 1.0 ? (uint64_t{1} << 32) : uint64_t(std::ceil(std::ldexp(p, 32) - 0.5));
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(6, c.outputs[0]);
  const bool has_mask = c.num_outputs >= 2;
  if (has_mask) e.operand(7, c.outputs[1]);
  e.p.i[0] = has_mask ? 1 : 0;
  philox_params(e, c);
  put_u64(&e.p.extra[4], thr);
  put_double(&e.p.extra[6], scale);
  return e.dispatch_flat(r, pick(c.inputs[0].dtype, ShaderId::dropout_f32, ShaderId::dropout_f64));
}

KernelResult optimizer(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.inputs[0]);
  for (int k = 0; k < c.num_inputs && k < 4; ++k) e.operand(k, c.inputs[k]);
  for (int k = 0; k < 5; ++k) e.attr(k, c.f[k]);
  const bool f64 = c.inputs[0].dtype == BRAID_FLOAT64;
  ShaderId id = f64 ? ShaderId::sgd_f64 : ShaderId::sgd_f32;
  if (c.op == BRAID_KOP_SGD_MOMENTUM) id = f64 ? ShaderId::sgd_momentum_f64 : ShaderId::sgd_momentum_f32;
  if (c.op == BRAID_KOP_ADAM_UPDATE) {
    id = f64 ? ShaderId::adam_f64 : ShaderId::adam_f32;
    const double b1 = c.f[1], b2 = c.f[2];
    const double t = static_cast<double>(std::max<int64_t>(c.i[0], 1));
    e.attr(5, 1.0 / (1.0 - std::pow(b1, t)));
    e.attr(6, 1.0 / (1.0 - std::pow(b2, t)));
    e.attr(7, 1.0 - b1);
    const float ob2 = static_cast<float>(1.0 - b2);
    std::memcpy(&e.p.extra[0], &ob2, 4);
  }
  return e.dispatch_flat(r, id);
}

}  // namespace braid::vk::enc
