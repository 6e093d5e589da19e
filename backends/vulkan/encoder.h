// What every kernel encoder shares (the encode_*.cpp files): the encoding state of one kernel
// (parameter block and bindings, Enc) and the small conversions the shaders expect, and the encoders
// themselves, which kernels.cpp dispatches to by op.
#pragma once
#include <algorithm>
#include <cstring>
#include <string>

#include "float_to_int.h"
#include "kernel_call.h"
#include "kernels.h"

namespace braid::vk::enc {

inline constexpr uint32_t kGroup = 256;  // local_size_x of the elementwise shaders

using plugin::dtype_name;
using plugin::dtype_size;

inline int64_t numel(const braid_buffer_view& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.shape[i];
  return n;
}

// The float64 variant of a shader when the kernel's dtype is float64.
inline ShaderId pick(braid_dtype dt, ShaderId f32, ShaderId f64) { return dt == BRAID_FLOAT64 ? f64 : f32; }

inline KernelResult fail(braid_status s, std::string m) { return {s, std::move(m)}; }
inline KernelResult ok() { return {}; }

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
  // One invocation per element of p.n, over a 2-D grid of workgroups (with the error word when the
  // shader can report one).
  template <class Shader>
  KernelResult dispatch_flat(Recorder& r, Shader shader, const char* error_message = nullptr) {
    uint32_t groups = (p.n + kGroup - 1) / kGroup;
    uint32_t gx = std::min<uint32_t>(groups, 65535), gy = gx ? (groups + gx - 1) / gx : 0;
    return dispatch(r, shader, gx, gy, 1, error_message);
  }
};

// A double attribute as the integer of dtype (int32 or int64) the CPU backend makes of it: truncated,
// saturated at that dtype's bounds, NaN -> 0 (3e9 is INT32_MAX for int32, not its low 32 bits). As
// int64 bits in extra[0..1]; the int32 shaders read the low word.
inline void int_scalar(Enc& e, braid_dtype dtype, double v) {
  const int64_t i = dtype == BRAID_INT32 ? plugin::float_to_int<int32_t>(v) : plugin::float_to_int<int64_t>(v);
  const auto u = static_cast<uint64_t>(i);
  e.p.extra[0] = static_cast<uint32_t>(u);
  e.p.extra[1] = static_cast<uint32_t>(u >> 32);
}

inline bool is_int(braid_dtype d) { return d == BRAID_INT32 || d == BRAID_INT64; }

// A double as the CPU backend converts it to uint8: truncated, saturated to [0, 255], NaN -> 0.
inline uint32_t to_u8(double v) {
  if (!(v == v) || v <= 0.0) return 0;
  return v >= 256.0 ? 255u : static_cast<uint32_t>(v);
}

inline void put_double(uint32_t* at, double v) { std::memcpy(at, &v, sizeof v); }
inline void put_u64(uint32_t* at, uint64_t v) {
  at[0] = static_cast<uint32_t>(v);
  at[1] = static_cast<uint32_t>(v >> 32);
}

// One workgroup per output element (or row): p.n groups over a 2-D grid.
inline KernelResult dispatch_groups(Enc& e, Recorder& r, ShaderId s) {
  uint32_t gx = std::min<uint32_t>(e.p.n, 65535), gy = gx ? (e.p.n + gx - 1) / gx : 0;
  return e.dispatch(r, s, gx, gy);
}

// encode_elementwise.cpp
KernelResult fill(const braid_kernel_call& c, Recorder& r);
KernelResult arange(const braid_kernel_call& c, Recorder& r);
KernelResult copy(const braid_kernel_call& c, Recorder& r);
KernelResult unary(const braid_kernel_call& c, Recorder& r);
KernelResult binary(const braid_kernel_call& c, Recorder& r);
KernelResult where(const braid_kernel_call& c, Recorder& r);
KernelResult take(const braid_kernel_call& c, Recorder& r);  // TAKE and TAKE_BWD
KernelResult binary_scalar(const braid_kernel_call& c, Recorder& r);
KernelResult fused(const braid_kernel_call& c, Recorder& r);
KernelResult random_uniform(const braid_kernel_call& c, Recorder& r);
KernelResult random_normal(const braid_kernel_call& c, Recorder& r);
KernelResult dropout(const braid_kernel_call& c, Recorder& r);
KernelResult optimizer(const braid_kernel_call& c, Recorder& r);  // SGD, SGD with momentum, Adam

// encode_nn.cpp
KernelResult reduce(const braid_kernel_call& c, Recorder& r);
KernelResult argmax(const braid_kernel_call& c, Recorder& r);
KernelResult softmax(const braid_kernel_call& c, Recorder& r);
KernelResult matmul(const braid_kernel_call& c, Recorder& r);
KernelResult conv2d(const braid_kernel_call& c, Recorder& r);
KernelResult pool2d(const braid_kernel_call& c, Recorder& r);
KernelResult softmax_ce(const braid_kernel_call& c, Recorder& r);
KernelResult batch_norm(const braid_kernel_call& c, Recorder& r);
KernelResult softmax_ce_bwd(const braid_kernel_call& c, Recorder& r);
KernelResult pool2d_bwd(const braid_kernel_call& c, Recorder& r);
KernelResult conv2d_bwd_data(const braid_kernel_call& c, Recorder& r);
KernelResult conv2d_bwd_weight(const braid_kernel_call& c, Recorder& r);
KernelResult batch_norm_bwd(const braid_kernel_call& c, Recorder& r);

}  // namespace braid::vk::enc
