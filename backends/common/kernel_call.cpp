#include "kernel_call.h"

#include "enum_value.h"

namespace braid::plugin {

const char* op_name(const braid_kernel_op& op) noexcept {
  static constexpr const char* kNames[] = {"fill",
                                           "arange",
                                           "random_uniform",
                                           "random_normal",
                                           "copy",
                                           "unary",
                                           "binary",
                                           "binary_scalar",
                                           "reduce",
                                           "argmax",
                                           "matmul",
                                           "conv2d",
                                           "pool2d",
                                           "batch_norm",
                                           "softmax",
                                           "softmax_cross_entropy",
                                           "dropout",
                                           "sgd_update",
                                           "sgd_momentum",
                                           "adam_update",
                                           "conv2d_bwd_data",
                                           "conv2d_bwd_weight",
                                           "pool2d_bwd",
                                           "batch_norm_bwd",
                                           "softmax_cross_entropy_bwd",
                                           "combine",
                                           "fused_elementwise",
                                           "where",
                                           "take",
                                           "take_bwd"};
  static_assert(sizeof kNames / sizeof kNames[0] == BRAID_KOP_COUNT, "one name per kernel op");
  return valid_op(op) ? kNames[op] : "invalid";
}

const char* dtype_name(const braid_dtype& dtype) noexcept {
  static constexpr const char* kNames[] = {"float32", "float64", "int32",    "int64",
                                           "uint8",   "float16", "bfloat16", "bool"};
  static_assert(sizeof kNames / sizeof kNames[0] == BRAID_DTYPE_COUNT, "one name per dtype");
  return valid_dtype(dtype) ? kNames[dtype] : "invalid";
}

uint32_t dtype_size(const braid_dtype& dtype) noexcept {
  static constexpr uint32_t kSizes[] = {4, 8, 4, 8, 1, 2, 2, 1};
  static_assert(sizeof kSizes / sizeof kSizes[0] == BRAID_DTYPE_COUNT, "one size per dtype");
  return valid_dtype(dtype) ? kSizes[dtype] : 0;
}

braid_dtype call_dtype(const braid_kernel_call& call) noexcept {
  switch (enum_value(call.op)) {
    case BRAID_KOP_FILL:
    case BRAID_KOP_ARANGE:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL: return call.num_outputs > 0 ? call.outputs[0].dtype : BRAID_DTYPE_COUNT;
    default: return call.num_inputs > 0 ? call.inputs[0].dtype : BRAID_DTYPE_COUNT;
  }
}

std::string kernels_call_message(uint32_t index, uint32_t count, const braid_kernel_op& op, std::string_view message) {
  std::string m = "kernels call " + std::to_string(index) + " of " + std::to_string(count) + " (" + op_name(op) + "): ";
  m += message;
  return m;
}

bool in_support_table(const uint32_t (&masks)[BRAID_KOP_COUNT], const braid_kernel_op& op,
                      const braid_dtype& dtype) noexcept {
  return valid_op(op) && valid_dtype(dtype) && (masks[op] >> dtype & 1u) != 0;
}

bool elementwise_call_ok(const braid_kernel_call& call, uint32_t int_unary, uint32_t int_binary) noexcept {
  const long long op = enum_value(call.op);
  if (op != BRAID_KOP_UNARY && op != BRAID_KOP_BINARY && op != BRAID_KOP_BINARY_SCALAR) return true;
  const bool unary = op == BRAID_KOP_UNARY;
  const int64_t sub = call.i[0];
  const int64_t count = unary ? int64_t{BRAID_UNARY_COUNT} : int64_t{BRAID_BINARY_COUNT};
  if (sub < 0 || sub >= count) return false;
  const braid_dtype dt = call_dtype(call);
  const bool integral = dt == BRAID_INT32 || dt == BRAID_INT64;
  return !integral || ((unary ? int_unary : int_binary) >> sub & 1u) != 0;
}

}  // namespace braid::plugin
