// kernel_supports and launch_kernel: the one table of what the CUDA backend implements (the same dtype
// coverage as the CPU backend) and the routing from op to the file that implements it.
#include <string>

#include "fused_codegen.h"
#include "kernels.h"
#include "launch.h"

namespace braid::cuda {
namespace {

using plugin::kAllTypes;
using plugin::kFloatTypes;
using plugin::kNumericTypes;

// Dtype masks per op, the one source of kernel_supports and launch_kernel's guard.
constexpr uint32_t kSupport[BRAID_KOP_COUNT] = {
    /* FILL */ kAllTypes,
    /* ARANGE */ kNumericTypes,
    /* RANDOM_UNIFORM */ kFloatTypes,
    /* RANDOM_NORMAL */ kFloatTypes,
    /* COPY */ kAllTypes,
    /* UNARY */ kNumericTypes,
    /* BINARY */ kNumericTypes,
    /* BINARY_SCALAR */ kNumericTypes,
    /* REDUCE */ kNumericTypes,
    /* ARGMAX */ kNumericTypes,
    /* MATMUL */ kFloatTypes | plugin::dtype_bit(BRAID_BFLOAT16) | plugin::dtype_bit(BRAID_FLOAT16),  // float32 out
    /* CONV2D */ kFloatTypes,
    /* POOL2D */ kFloatTypes,
    /* BATCH_NORM */ kFloatTypes,
    /* SOFTMAX */ kFloatTypes,
    /* SOFTMAX_CE */ kFloatTypes,
    /* DROPOUT */ kFloatTypes,
    /* SGD_UPDATE */ kFloatTypes,
    /* SGD_MOMENTUM */ kFloatTypes,
    /* ADAM_UPDATE */ kFloatTypes,
    /* CONV2D_BWD_DATA */ kFloatTypes,
    /* CONV2D_BWD_WEIGHT */ kFloatTypes,
    /* POOL2D_BWD */ kFloatTypes,
    /* BATCH_NORM_BWD */ kFloatTypes,
    /* SOFTMAX_CE_BWD */ kFloatTypes,
    /* COMBINE */ 0,
    /* FUSED_ELEMENTWISE */ kFloatTypes,  // where NVRTC loads (kernel_supports)
    /* WHERE */ kNumericTypes,
    /* TAKE */ kAllTypes,
    /* TAKE_BWD */ kFloatTypes,
};

constexpr kern::Launcher kLaunchers[BRAID_KOP_COUNT] = {
    kern::fill,
    kern::arange,
    kern::random,
    kern::random,
    kern::copy,
    kern::unary,
    kern::binary,
    kern::binary_scalar,
    kern::reduce,
    kern::argmax,
    kern::matmul,
    kern::conv2d,
    kern::pool2d,
    kern::batch_norm,
    kern::softmax,
    kern::softmax_ce,
    kern::dropout,
    kern::sgd,
    kern::sgd_momentum,
    kern::adam,
    kern::conv2d_bwd_data,
    kern::conv2d_bwd_weight,
    kern::pool2d_bwd,
    kern::batch_norm_bwd,
    kern::softmax_ce_bwd,
    nullptr,  // COMBINE
    kern::fused_elementwise,
    kern::where,
    kern::take,
    kern::take,
};

}  // namespace

const char* kernel_error_text(int code) {
  switch (code) {
    case kErrLabel: return "a label is outside [0, K)";
    case kErrIntDivZero: return "integer division by zero";
    case kErrIntPowZero: return "integer zero to a negative power";
    case kErrIndex: return "an index is out of range";
    default: return "kernel reported an unknown error";
  }
}

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  if (op == BRAID_KOP_FUSED_ELEMENTWISE && !nvrtc_available()) return false;  // kernels compiled at run time
  return plugin::in_support_table(kSupport, op, dtype);
}

bool call_supports(const braid_kernel_call& call) noexcept {
  return kernel_supports(call.op, plugin::call_dtype(call)) &&
         plugin::elementwise_call_ok(call, plugin::kIntegerUnaryOps, plugin::kIntegerBinaryOps);
}

bool needs_error_flag(const braid_kernel_call& c) {
  if (c.op == BRAID_KOP_SOFTMAX_CE || c.op == BRAID_KOP_SOFTMAX_CE_BWD || c.op == BRAID_KOP_TAKE ||
      c.op == BRAID_KOP_TAKE_BWD)
    return true;
  const bool integral = c.num_inputs > 0 && (c.inputs[0].dtype == BRAID_INT32 || c.inputs[0].dtype == BRAID_INT64);
  return integral && (c.op == BRAID_KOP_BINARY || c.op == BRAID_KOP_BINARY_SCALAR) &&
         (c.i[0] == BRAID_BINARY_DIV || c.i[0] == BRAID_BINARY_POW || c.i[0] == BRAID_BINARY_FLOOR_DIVIDE ||
          c.i[0] == BRAID_BINARY_MOD);
}

braid_status launch_kernel(const braid_kernel_call& call, KernelEnv& env, std::string& message) {
  const braid_dtype dt = plugin::call_dtype(call);
  if (!call_supports(call)) {
    message = std::string("cuda backend: ") + plugin::op_name(call.op) + " is not implemented for dtype " +
              plugin::dtype_name(dt);
    if (kernel_supports(call.op, dt)) message += " (not for this sub-op)";
    return BRAID_ERR_UNSUPPORTED;
  }
  return kLaunchers[call.op](call, env, message);
}

}  // namespace braid::cuda
