// kernel_supports and launch_kernel: the one table of what the CUDA backend implements (the same dtype
// coverage as the CPU backend) and the routing from op to the file that implements it.
#include <string>

#include "kernels.h"
#include "launch.h"

namespace braid::cuda {
namespace {

constexpr uint32_t bit(braid_dtype d) { return 1u << d; }
constexpr uint32_t kFloat = bit(BRAID_FLOAT32) | bit(BRAID_FLOAT64);
constexpr uint32_t kNumeric = kFloat | bit(BRAID_INT32) | bit(BRAID_INT64);
constexpr uint32_t kAll = kNumeric | bit(BRAID_UINT8) | bit(BRAID_FLOAT16) | bit(BRAID_BFLOAT16);

struct Entry {
  const char* name;
  uint32_t dtypes;
  kern::Launcher fn;
};

constexpr Entry kTable[BRAID_KOP_COUNT] = {
    {"fill", kAll, kern::fill},
    {"arange", kNumeric, kern::arange},
    {"random_uniform", kFloat, kern::random},
    {"random_normal", kFloat, kern::random},
    {"copy", kAll, kern::copy},
    {"unary", kNumeric, kern::unary},
    {"binary", kNumeric, kern::binary},
    {"binary_scalar", kNumeric, kern::binary_scalar},
    {"reduce", kNumeric, kern::reduce},
    {"argmax", kNumeric, kern::argmax},
    {"matmul", kFloat, kern::matmul},
    {"conv2d", kFloat, kern::conv2d},
    {"pool2d", kFloat, kern::pool2d},
    {"batch_norm", kFloat, kern::batch_norm},
    {"softmax", kFloat, kern::softmax},
    {"softmax_cross_entropy", kFloat, kern::softmax_ce},
    {"dropout", kFloat, kern::dropout},
    {"sgd_update", kFloat, kern::sgd},
    {"sgd_momentum", kFloat, kern::sgd_momentum},
    {"adam_update", kFloat, kern::adam},
    {"conv2d_bwd_data", kFloat, kern::conv2d_bwd_data},
    {"conv2d_bwd_weight", kFloat, kern::conv2d_bwd_weight},
    {"pool2d_bwd", kFloat, kern::pool2d_bwd},
    {"batch_norm_bwd", kFloat, kern::batch_norm_bwd},
    {"softmax_cross_entropy_bwd", kFloat, kern::softmax_ce_bwd},
};

// Creation ops are typed by their output, everything else by its first input.
braid_dtype call_dtype(const braid_kernel_call& c) {
  switch (c.op) {
    case BRAID_KOP_FILL:
    case BRAID_KOP_ARANGE:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL:
      return c.num_outputs > 0 ? c.outputs[0].dtype : BRAID_DTYPE_COUNT;
    default:
      return c.num_inputs > 0 ? c.inputs[0].dtype : BRAID_DTYPE_COUNT;
  }
}

}  // namespace

const char* kernel_error_text(int code) {
  switch (code) {
    case kErrLabel: return "a label is outside [0, K)";
    case kErrIntDivZero: return "integer division by zero";
    case kErrIntPowZero: return "integer zero to a negative power";
    default: return "kernel reported an unknown error";
  }
}

const char* op_name(braid_kernel_op op) { return op >= 0 && op < BRAID_KOP_COUNT ? kTable[op].name : "invalid"; }

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  return op >= 0 && op < BRAID_KOP_COUNT && dtype >= 0 && dtype < BRAID_DTYPE_COUNT && (kTable[op].dtypes >> dtype & 1u) != 0;
}

bool needs_error_flag(const braid_kernel_call& c) {
  if (c.op == BRAID_KOP_SOFTMAX_CE || c.op == BRAID_KOP_SOFTMAX_CE_BWD) return true;
  const bool integral = c.num_inputs > 0 && (c.inputs[0].dtype == BRAID_INT32 || c.inputs[0].dtype == BRAID_INT64);
  return integral && (c.op == BRAID_KOP_BINARY || c.op == BRAID_KOP_BINARY_SCALAR) &&
         (c.i[0] == BRAID_BINARY_DIV || c.i[0] == BRAID_BINARY_POW);
}

braid_status launch_kernel(const braid_kernel_call& call, KernelEnv& env, std::string& message) {
  const braid_dtype dt = call_dtype(call);
  if (!kernel_supports(call.op, dt)) {
    message = std::string("cuda backend: ") + op_name(call.op) + " is not implemented for this dtype";
    return BRAID_ERR_UNSUPPORTED;
  }
  return kTable[call.op].fn(call, env, message);
}

}  // namespace braid::cuda
