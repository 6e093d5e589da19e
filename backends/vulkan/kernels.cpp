// Kernel encoders: validate what the shaders can do, fill the parameter block and dispatch.
#include "kernels.h"

#include <algorithm>
#include <cstring>

namespace braid::vk {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of the elementwise shaders

uint64_t dtype_size(braid_dtype d) {
  switch (d) {
    case BRAID_FLOAT64: case BRAID_INT64: return 8;
    case BRAID_UINT8: return 1;
    case BRAID_FLOAT16: case BRAID_BFLOAT16: return 2;
    default: return 4;
  }
}

int64_t numel(const braid_buffer_view& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.shape[i];
  return n;
}

// braid_dtype_name lives in libbraid, which a plugin does not link.
const char* dtype_name(braid_dtype d) {
  static const char* const names[] = {"float32", "float64", "int32", "int64", "uint8", "float16", "bfloat16"};
  return d >= 0 && d < BRAID_DTYPE_COUNT ? names[d] : "unknown dtype";
}

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
  // The iteration shape (row-major) and element count.
  void shape(const braid_buffer_view& v) {
    p.ndim = static_cast<uint32_t>(v.ndim);
    for (int d = 0; d < v.ndim; ++d) p.shape[d] = static_cast<uint32_t>(v.shape[d]);
    int64_t n = numel(v);
    if (n > INT32_MAX) error = "more than 2^31 elements in one kernel";
    p.n = static_cast<uint32_t>(n);
  }
  KernelResult dispatch(Recorder& r, ShaderId s, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
    if (!error.empty()) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: " + error);
    std::string e = r.dispatch(s, p, b, gx, gy, gz);
    return e.empty() ? ok() : fail(BRAID_ERR_KERNEL, "vulkan: " + e);
  }
  // One invocation per element of p.n, over a 2-D grid of workgroups.
  KernelResult dispatch_flat(Recorder& r, ShaderId s) {
    uint32_t groups = (p.n + kGroup - 1) / kGroup;
    uint32_t gx = std::min<uint32_t>(groups, 65535), gy = gx ? (groups + gx - 1) / gx : 0;
    return dispatch(r, s, gx, gy);
  }
};

KernelResult fill(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  e.p.f[0] = static_cast<float>(c.f[0]);
  return e.dispatch_flat(r, c.outputs[0].dtype == BRAID_INT32 ? ShaderId::fill_i32 : ShaderId::fill_f32);
}

KernelResult arange(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(6, c.outputs[0]);
  e.p.f[0] = static_cast<float>(c.f[0]);
  e.p.f[1] = static_cast<float>(c.f[1]);
  return e.dispatch_flat(r, ShaderId::arange_f32);
}

KernelResult copy(const braid_kernel_call& c, Recorder& r) {
  const braid_dtype s = c.inputs[0].dtype, d = c.outputs[0].dtype;
  ShaderId id;
  auto is32 = [](braid_dtype t) { return t == BRAID_FLOAT32 || t == BRAID_INT32; };
  auto is64 = [](braid_dtype t) { return t == BRAID_FLOAT64 || t == BRAID_INT64; };
  if (s == d && is32(s)) id = ShaderId::copy_u32;
  else if (s == d && is64(s)) id = ShaderId::copy_u64;
  else if (s == BRAID_FLOAT32 && d == BRAID_INT32) id = ShaderId::copy_f32_i32;
  else if (s == BRAID_INT32 && d == BRAID_FLOAT32) id = ShaderId::copy_i32_f32;
  else if (s == BRAID_INT32 && d == BRAID_INT64) id = ShaderId::copy_i32_i64;
  else if (s == BRAID_INT64 && d == BRAID_INT32) id = ShaderId::copy_i64_i32;
  else if (s == BRAID_FLOAT32 && d == BRAID_INT64) id = ShaderId::copy_f32_i64;
  else if (s == BRAID_INT64 && d == BRAID_FLOAT32) id = ShaderId::copy_i64_f32;
  else
    return fail(BRAID_ERR_UNSUPPORTED, std::string("vulkan: no copy kernel from ") + dtype_name(s) + " to " +
                                           dtype_name(d));
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
  return e.dispatch_flat(r, ShaderId::unary_f32);
}

KernelResult binary(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(1, c.inputs[1]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  return e.dispatch_flat(r, ShaderId::binary_f32);
}

KernelResult binary_scalar(const braid_kernel_call& c, Recorder& r) {
  Enc e;
  e.shape(c.outputs[0]);
  e.operand(0, c.inputs[0]);
  e.operand(6, c.outputs[0]);
  e.p.i[0] = static_cast<int32_t>(c.i[0]);
  e.p.i[1] = static_cast<int32_t>(c.i[1]);
  e.p.f[0] = static_cast<float>(c.f[0]);
  return e.dispatch_flat(r, ShaderId::binary_scalar_f32);
}

}  // namespace

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  switch (op) {
    case BRAID_KOP_FILL: return dtype == BRAID_FLOAT32 || dtype == BRAID_INT32;
    case BRAID_KOP_COPY:
      return dtype == BRAID_FLOAT32 || dtype == BRAID_INT32 || dtype == BRAID_INT64;
    case BRAID_KOP_ARANGE:
    case BRAID_KOP_UNARY:
    case BRAID_KOP_BINARY:
    case BRAID_KOP_BINARY_SCALAR:
      return dtype == BRAID_FLOAT32;
    default: return false;
  }
}

KernelResult encode_kernel(const braid_kernel_call& c, Recorder& r) {
  const braid_dtype dt = c.num_inputs > 0 ? c.inputs[0].dtype : c.outputs[0].dtype;
  if (!kernel_supports(c.op, dt)) return fail(BRAID_ERR_UNSUPPORTED, "vulkan: no kernel for this op and dtype");
  switch (c.op) {
    case BRAID_KOP_FILL: return fill(c, r);
    case BRAID_KOP_ARANGE: return arange(c, r);
    case BRAID_KOP_COPY: return copy(c, r);
    case BRAID_KOP_UNARY: return unary(c, r);
    case BRAID_KOP_BINARY: return binary(c, r);
    case BRAID_KOP_BINARY_SCALAR: return binary_scalar(c, r);
    default: return fail(BRAID_ERR_UNSUPPORTED, "vulkan: no kernel for this op");
  }
}

}  // namespace braid::vk
