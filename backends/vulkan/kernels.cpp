// Which kernels the plugin has (kernel_supports, call_supports) and encode_kernel, which sends each call to
// its encoder (encode_elementwise.cpp, encode_nn.cpp).
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "encoder.h"
#include "kernel_call.h"

namespace braid::vk {
namespace {

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
    case BRAID_KOP_TAKE:
      return dtype == BRAID_FLOAT32 || dtype == BRAID_FLOAT64 || dtype == BRAID_INT32 || dtype == BRAID_INT64;
    case BRAID_KOP_TAKE_BWD:
      return dtype == BRAID_FLOAT32 || (dtype == BRAID_FLOAT64 && all_devices_have(&PhysicalDevice::float64));
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

// int_elementwise.comp has the shared integer ops but DIV and POW (the runtime refuses those for
// integers anyway); FLOOR_DIVIDE and MOD report a zero divisor through the error word.
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
  using namespace enc;
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
  const bool copies_bits = c.op == BRAID_KOP_WHERE || c.op == BRAID_KOP_TAKE;
  if (any_f64 && !copies_bits && !r.physical().float64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: the device has no shaderFloat64");
  if (dt == BRAID_INT64 && c.op != BRAID_KOP_COPY && !copies_bits && !r.physical().int64)
    return fail(BRAID_ERR_UNSUPPORTED, "vulkan: the device has no shaderInt64");
  switch (c.op) {
    case BRAID_KOP_FILL: return fill(c, r);
    case BRAID_KOP_ARANGE: return arange(c, r);
    case BRAID_KOP_COPY: return copy(c, r);
    case BRAID_KOP_UNARY: return unary(c, r);
    case BRAID_KOP_BINARY: return binary(c, r);
    case BRAID_KOP_BINARY_SCALAR: return binary_scalar(c, r);
    case BRAID_KOP_WHERE: return where(c, r);
    case BRAID_KOP_TAKE:
    case BRAID_KOP_TAKE_BWD: return take(c, r);
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
