// Kernel encoders: validate what the shaders can do, fill the parameter block and dispatch.
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "float_to_int.h"
#include "fused_codegen.h"
#include "kernel_call.h"

namespace braid::vk {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of the elementwise shaders

using plugin::dtype_name;
using plugin::dtype_size;

int64_t numel(const braid_buffer_view& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.shape[i];
  return n;
}

// The float64 variant of a shader when the kernel's dtype is float64.
ShaderId pick(braid_dtype dt, ShaderId f32, ShaderId f64) { return dt == BRAID_FLOAT64 ? f64 : f32; }

KernelResult fail(braid_status s, std::string m) { return {s, std::move(m)}; }
KernelResult ok() { return {}; }

// Encoding state for one kernel: its parameter block and bindings.
struct Enc {
  Params p;
  Binding b[kNumBindings];
  std::string error;

  // Binds `v` as operand `op` (0..5 inputs, 6..9 outputs): the binding starts at the 256-byte
  // boundary at or below the view's first byte (buffers start on one), the rest goes to off[op].
  void operand(int op, const braid_buffer_view& v) {
    const braid_backend_buffer_t* buf = v.buffer;
    const uint64_t esize = dtype_size(v.dtype);
    const uint64_t aligned = v.byte_offset & ~uint64_t{255};
    const uint64_t end = (buf->size + 255) & ~uint64_t{255};
    Binding& bd = b[op < 6 ? kFirstInputBinding + op : kFirstOutputBinding + (op - 6)];
    bd.buffer = buf->buffer;
    bd.offset = buf->offset + aligned;
    bd.range = end > aligned ? end - aligned : 256;
    p.off[op] = static_cast<int32_t>((v.byte_offset - aligned) / esize);
    for (int d = 0; d < v.ndim && d < 8; ++d) {
      if (v.strides[d] > INT32_MAX || v.strides[d] < INT32_MIN) error = "a stride exceeds 32 bits";
      p.strides[op * 8 + d] = static_cast<int32_t>(v.strides[d]);
    }
  }
  // Scalar attribute k for the shaders: as a float (float32 kernels) and a double (float64 kernels).
  void attr(int k, double v) {
    static_assert(sizeof p.dattr == 2 * sizeof p.f);
    p.f[k] = static_cast<float>(v);
    std::memcpy(&p.dattr[2 * k], &v, sizeof v);
  }
  // The iteration shape (row-major) and element count.
  void shape(const braid_buffer_view& v) {
    p.ndim = static_cast<uint32_t>(v.ndim);
    for (int d = 0; d < v.ndim; ++d) p.shape[d] = static_cast<uint32_t>(v.shape[d]);
    int64_t n = numel(v);
    if (n > INT32_MAX) error = "more than 2^31 elements in one kernel";
    p.n = static_cast<uint32_t>(n);
  }
  // Marks the operands whose strides are row-major over the iteration shape (dimensions of size 1
  // excepted), so the shaders' offset_of takes its fast path. Exact whatever the operand's role: the
  // mark only says that offset_of's sum equals off + idx.
  void mark_contiguous() {
    int64_t expect[8] = {};
    int64_t s = 1;
    for (int d = static_cast<int>(p.ndim) - 1; d >= 0; --d) {
      expect[d] = s;
      s *= p.shape[d];
    }
    p.contig = 0;
    for (int op = 0; op < kMaxOperands; ++op) {
      bool c = true;
      for (uint32_t d = 0; d < p.ndim; ++d)
        if (p.shape[d] != 1 && p.strides[op * 8 + d] != expect[d]) c = false;
      if (c) p.contig |= 1u << op;
    }
  }
  // `shader` is a ShaderId or a VkPipeline made at run time.
  template <class Shader>
  KernelResult dispatch(Recorder& r, Shader shader, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1,
                        const char* error_message = nullptr) {
    if (!error.empty()) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: " + error);
    mark_contiguous();
    std::string e = r.dispatch(shader, p, b, gx, gy, gz, error_message);
    return e.empty() ? ok() : fail(BRAID_ERR_KERNEL, "vulkan: " + e);
  }
  // One invocation per element of p.n, over a 2-D grid of workgroups.
  template <class Shader>
  KernelResult dispatch_flat(Recorder& r, Shader shader) {
    uint32_t groups = (p.n + kGroup - 1) / kGroup;
    uint32_t gx = std::min<uint32_t>(groups, 65535), gy = gx ? (groups + gx - 1) / gx : 0;
    return dispatch(r, shader, gx, gy);
  }
};

// A double attribute as the integer of dtype (int32 or int64) the CPU backend makes of it: truncated,
// saturated at that dtype's bounds, NaN -> 0 (3e9 is INT32_MAX for int32, not its low 32 bits). As
// int64 bits in extra[0..1]; the int32 shaders read the low word.
void int_scalar(Enc& e, braid_dtype dtype, double v) {
  const int64_t i = dtype == BRAID_INT32 ? plugin::float_to_int<int32_t>(v) : plugin::float_to_int<int64_t>(v);
  const auto u = static_cast<uint64_t>(i);
  e.p.extra[0] = static_cast<uint32_t>(u);
  e.p.extra[1] = static_cast<uint32_t>(u >> 32);
}

bool is_int(braid_dtype d) { return d == BRAID_INT32 || d == BRAID_INT64; }

// A double as the CPU backend converts it to uint8: truncated, saturated to [0, 255], NaN -> 0.
uint32_t to_u8(double v) {
  if (!(v == v) || v <= 0.0) return 0;
  return v >= 256.0 ? 255u : static_cast<uint32_t>(v);
}

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

KernelResult binary(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(1, c.inputs[1]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  const braid_dtype dt = c.inputs[0].dtype;
  if (is_int(dt)) return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::binary_i32 : ShaderId::binary_i64);
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
    return e.dispatch_flat(r, dt == BRAID_INT32 ? ShaderId::binary_scalar_i32 : ShaderId::binary_scalar_i64);
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

void put_double(uint32_t* at, double v) { std::memcpy(at, &v, sizeof v); }
void put_u64(uint32_t* at, uint64_t v) {
  at[0] = static_cast<uint32_t>(v);
  at[1] = static_cast<uint32_t>(v >> 32);
}

// The most elements one workgroup reduces per output (REDUCE): 4M passed on lavapipe, 8M did not.
constexpr int64_t kMaxReduceCount = int64_t{1} << 22;

// One workgroup per output element (or row): p.n groups over a 2-D grid.
KernelResult dispatch_groups(Enc& e, Recorder& r, ShaderId s) {
  uint32_t gx = std::min<uint32_t>(e.p.n, 65535), gy = gx ? (e.p.n + gx - 1) / gx : 0;
  return e.dispatch(r, s, gx, gy);
}

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

void philox_params(Enc& e, const braid_kernel_call& c) {
  put_u64(&e.p.extra[0], static_cast<uint64_t>(c.i[0]));
  put_u64(&e.p.extra[2], static_cast<uint64_t>(c.i[1]));
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

// supports() cannot name a device, so a dtype that needs a feature is offered only where every
// device has it.
bool all_devices_have(bool PhysicalDevice::*feature) {
  const Instance& in = instance();
  if (in.devices.empty()) return false;
  for (const auto& d : in.devices)
    if (!(d.*feature)) return false;
  return true;
}

}  // namespace

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  switch (op) {
    case BRAID_KOP_FILL:
    case BRAID_KOP_UNARY:
    case BRAID_KOP_BINARY:
    case BRAID_KOP_BINARY_SCALAR:
      // Integer versions: int32 always, int64 where every device has shaderInt64; uint8 fill only.
      if (dtype == BRAID_INT32 || (dtype == BRAID_INT64 && all_devices_have(&PhysicalDevice::int64))) return true;
      if (dtype == BRAID_UINT8) return op == BRAID_KOP_FILL;
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
    case BRAID_KOP_COPY:
      // float16 (casts to and from float32) and bfloat16 storage (casts to and from float32 and
      // float64, as uint16 bit patterns) where every device has 16-bit storage buffers.
      // uint8 is held in 32-bit words (no 8-bit storage feature needed).
      return dtype == BRAID_FLOAT32 || dtype == BRAID_INT32 || dtype == BRAID_INT64 || dtype == BRAID_UINT8 ||
             (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64)) ||
             ((dtype == BRAID_FLOAT16 || dtype == BRAID_BFLOAT16) && all_devices_have(&PhysicalDevice::float16));
    case BRAID_KOP_WHERE:  // bits copied: no float64 or int64 arithmetic needed
      return dtype == BRAID_FLOAT32 || dtype == BRAID_FLOAT64 || dtype == BRAID_INT32 || dtype == BRAID_INT64;
    case BRAID_KOP_FUSED_ELEMENTWISE:  // float programs, each its own shader compiled with shaderc
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
    case BRAID_KOP_REDUCE:
    case BRAID_KOP_ARGMAX:
      // Integer sum, max, min and argmax: int32 always, int64 where every device has shaderInt64.
      if (dtype == BRAID_INT32 || dtype == BRAID_INT64)
        return dtype == BRAID_INT32 || all_devices_have(&PhysicalDevice::int64);
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
    case BRAID_KOP_ARANGE:
      // Integer arange takes start and step as doubles: int32 where every device has shaderFloat64,
      // int64 where every device also has shaderInt64.
      if (dtype == BRAID_INT32 || dtype == BRAID_INT64)
        return all_devices_have(&PhysicalDevice::float64) &&
               (dtype == BRAID_INT32 || all_devices_have(&PhysicalDevice::int64));
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
    case BRAID_KOP_MATMUL:
    case BRAID_KOP_SOFTMAX:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL:
    case BRAID_KOP_DROPOUT:
    case BRAID_KOP_SGD_UPDATE:
    case BRAID_KOP_SGD_MOMENTUM:
    case BRAID_KOP_ADAM_UPDATE:
    case BRAID_KOP_CONV2D:
    case BRAID_KOP_POOL2D:
    case BRAID_KOP_SOFTMAX_CE:
    case BRAID_KOP_BATCH_NORM:
    case BRAID_KOP_CONV2D_BWD_DATA:
    case BRAID_KOP_CONV2D_BWD_WEIGHT:
    case BRAID_KOP_POOL2D_BWD:
    case BRAID_KOP_BATCH_NORM_BWD:
    case BRAID_KOP_SOFTMAX_CE_BWD:
      // float64 where every device has shaderFloat64 (supports() cannot name a device).
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
    default: return false;
  }
}

// int_elementwise.comp has the shared integer ops but DIV and POW.
constexpr uint32_t kIntBinary =
    plugin::kIntegerBinaryOps & ~plugin::op_bit(BRAID_BINARY_DIV) & ~plugin::op_bit(BRAID_BINARY_POW);

// The shaders index elements with 32-bit offsets and counts (common.glsl): a view whose elements lie
// further apart is refused here, at the call, rather than when the kernel is recorded. A view
// without elements is never read: its strides do not matter (encode_kernel zeroes them).
bool fits_32bit(const braid_buffer_view& v) noexcept {
  int64_t reach = 0;
  for (int d = 0; d < v.ndim && d < BRAID_MAX_DIMS; ++d) {
    if (v.shape[d] == 0) return true;
    const int64_t step = v.strides[d] < 0 ? -v.strides[d] : v.strides[d];
    if (step > INT32_MAX || v.shape[d] - 1 > INT32_MAX) return false;
    reach += (v.shape[d] - 1) * step;  // each term below 2^62, at most 8 of them: no overflow
    if (reach > INT32_MAX) return false;
  }
  return true;
}

bool call_supports(const braid_kernel_call& c) noexcept {
  if (!kernel_supports(c.op, plugin::call_dtype(c)) ||
      !plugin::elementwise_call_ok(c, plugin::kIntegerUnaryOps, kIntBinary))
    return false;
  // Integer reductions: sum, max and min (an integer mean or norm has no float result to give).
  if (c.op == BRAID_KOP_REDUCE && (plugin::call_dtype(c) == BRAID_INT32 || plugin::call_dtype(c) == BRAID_INT64) &&
      c.i[0] != BRAID_REDUCE_SUM && c.i[0] != BRAID_REDUCE_MAX && c.i[0] != BRAID_REDUCE_MIN)
    return false;
  for (int32_t k = 0; k < c.num_inputs && k < BRAID_KERNEL_MAX_INPUTS; ++k)
    if (!fits_32bit(c.inputs[k])) return false;
  for (int32_t k = 0; k < c.num_outputs && k < BRAID_KERNEL_MAX_OUTPUTS; ++k)
    if (!fits_32bit(c.outputs[k])) return false;
  return true;
}

KernelResult encode_kernel(const braid_kernel_call& call, Recorder& r) {
  // A view without elements is never read or written: its strides (which may be anything, 2^33 on a
  // [0, 2^33] tensor) are zeroed so that no 32-bit check refuses a kernel that reads nothing from it
  // (a reduction of an empty tensor is its identity, as on the CPU).
  braid_kernel_call c = call;
  const int32_t ins = std::clamp(c.num_inputs, 0, BRAID_KERNEL_MAX_INPUTS);
  const int32_t outs = std::clamp(c.num_outputs, 0, BRAID_KERNEL_MAX_OUTPUTS);
  for (int32_t k = 0; k < ins + outs; ++k) {
    braid_buffer_view& v = k < ins ? c.inputs[k] : c.outputs[k - ins];
    bool empty = false;
    for (int d = 0; d < v.ndim && d < BRAID_MAX_DIMS; ++d) empty = empty || v.shape[d] == 0;
    if (empty)
      for (int d = 0; d < BRAID_MAX_DIMS; ++d) v.strides[d] = 0;
  }
  const braid_dtype dt = c.num_inputs > 0 ? c.inputs[0].dtype : c.outputs[0].dtype;
  if (!kernel_supports(c.op, dt)) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: no kernel for this op and dtype");
  if (!call_supports(c)) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: no kernel for this op's sub-op and dtype");
  const bool any_f64 = dt == BRAID_FLOAT64 || (c.num_outputs > 0 && c.outputs[0].dtype == BRAID_FLOAT64);
  if (any_f64 && c.op != BRAID_KOP_WHERE && !r.physical().float64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: the device has no shaderFloat64");
  if (dt == BRAID_INT64 && c.op != BRAID_KOP_COPY && c.op != BRAID_KOP_WHERE && !r.physical().int64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: the device has no shaderInt64");
  switch (c.op) {
    case BRAID_KOP_FILL: return fill(c, r);
    case BRAID_KOP_ARANGE: return arange(c, r);
    case BRAID_KOP_COPY: return copy(c, r);
    case BRAID_KOP_UNARY: return unary(c, r);
    case BRAID_KOP_BINARY: return binary(c, r);
    case BRAID_KOP_BINARY_SCALAR: return binary_scalar(c, r);
    case BRAID_KOP_WHERE: return where(c, r);
    case BRAID_KOP_FUSED_ELEMENTWISE: return fused(c, r);
    case BRAID_KOP_REDUCE: return reduce(c, r);
    case BRAID_KOP_ARGMAX: return argmax(c, r);
    case BRAID_KOP_SOFTMAX: return softmax(c, r);
    case BRAID_KOP_MATMUL: return matmul(c, r);
    case BRAID_KOP_RANDOM_UNIFORM: return random_uniform(c, r);
    case BRAID_KOP_RANDOM_NORMAL: return random_normal(c, r);
    case BRAID_KOP_DROPOUT: return dropout(c, r);
    case BRAID_KOP_SGD_UPDATE:
    case BRAID_KOP_SGD_MOMENTUM:
    case BRAID_KOP_ADAM_UPDATE: return optimizer(c, r);
    case BRAID_KOP_CONV2D: return conv2d(c, r);
    case BRAID_KOP_POOL2D: return pool2d(c, r);
    case BRAID_KOP_SOFTMAX_CE: return softmax_ce(c, r);
    case BRAID_KOP_BATCH_NORM: return batch_norm(c, r);
    case BRAID_KOP_CONV2D_BWD_DATA: return conv2d_bwd_data(c, r);
    case BRAID_KOP_CONV2D_BWD_WEIGHT: return conv2d_bwd_weight(c, r);
    case BRAID_KOP_POOL2D_BWD: return pool2d_bwd(c, r);
    case BRAID_KOP_BATCH_NORM_BWD: return batch_norm_bwd(c, r);
    case BRAID_KOP_SOFTMAX_CE_BWD: return softmax_ce_bwd(c, r);
    default: return fail(BRAID_ERR_UNSUPPORTED, "vulkan: no kernel for this op");
  }
}

}  // namespace braid::vk
