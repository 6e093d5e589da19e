// run_kernel and kernel_supports: the one table of what the CPU backend implements, and the routing
// from op to the file that implements it.
#include <exception>
#include <new>

#include "common.h"

namespace braid::cpu {
namespace kern {

KernelResult unsupported(braid_kernel_op op, braid_dtype dt, const char* detail) {
  std::string m = std::string("cpu backend: ") + op_name(op) + " is not implemented for dtype " + dtype_name(dt);
  if (detail) m += std::string(" (") + detail + ")";
  return fail(BRAID_ERR_UNSUPPORTED, std::move(m));
}

namespace {

using plugin::kAllTypes;
using plugin::kFloatTypes;
using plugin::kNumericTypes;

// Dtype masks per op: the single source of truth for kernel_supports and run_kernel's guard. The
// elementwise ops' integer sub-ops are refined per call below (call_supports); REDUCE on ints
// (SUM/MAX/MIN) at run time.
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
    /* COMBINE */ kNumericTypes,
    /* FUSED_ELEMENTWISE */ kFloatTypes,
    /* WHERE */ kNumericTypes,
    /* TAKE */ kAllTypes,
    /* TAKE_BWD */ kFloatTypes,
};

using KernelFn = KernelResult (*)(const Call&, Exec&);
constexpr KernelFn kKernels[BRAID_KOP_COUNT] = {
    k_fill,
    k_arange,
    k_random,
    k_random,
    k_copy,
    k_unary,
    k_binary,
    k_binary_scalar,
    k_reduce,
    k_argmax,
    k_matmul,
    k_conv2d,
    k_pool2d,
    k_batch_norm,
    k_softmax,
    k_softmax_ce,
    k_dropout,
    k_sgd,
    k_sgd_momentum,
    k_adam,
    k_conv2d_bwd_data,
    k_conv2d_bwd_weight,
    k_pool2d_bwd,
    k_batch_norm_bwd,
    k_softmax_ce_bwd,
    k_combine,
    k_fused_elementwise,
    k_where,
    k_take,
    k_take_bwd,
};

}  // namespace
}  // namespace kern

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  return plugin::in_support_table(kern::kSupport, op, dtype);
}

bool call_supports(const braid_kernel_call& call) noexcept {
  return kernel_supports(call.op, plugin::call_dtype(call)) &&
         plugin::elementwise_call_ok(call, plugin::kIntegerUnaryOps, plugin::kIntegerBinaryOps);
}

KernelResult run_kernel(const braid_kernel_call& call, Exec& exec) {
  const braid_dtype dt = plugin::call_dtype(call);
  if (!call_supports(call))
    return kern::unsupported(call.op, dt, kernel_supports(call.op, dt) ? "not for this sub-op" : nullptr);
  // Nothing to write when every output has a zero dimension. Returned here, before any kernel forms
  // products of the other dimensions, which an empty tensor may have up to int64's limit.
  bool all_empty = call.num_outputs > 0;
  for (int32_t o = 0; o < call.num_outputs && all_empty; ++o) {
    bool empty = false;
    for (int32_t d = 0; d < call.outputs[o].ndim; ++d) empty = empty || call.outputs[o].shape[d] == 0;
    all_empty = empty;
  }
  if (all_empty) return {};
  // Kernels only throw for failed scratch allocations (std::vector), a oneDNN gemm that failed midway
  // (gemm_onednn.cpp), or if the arena rethrows one from a worker; nothing crosses the ABI.
  try {
    return kern::kKernels[call.op](call, exec);
  } catch (const std::bad_alloc&) {
    return kern::fail(BRAID_ERR_OUT_OF_MEMORY,
                      std::string("cpu backend: out of memory for scratch in ") + kern::op_name(call.op));
  } catch (const std::exception& e) {
    return kern::fail(BRAID_ERR_INTERNAL, std::string("cpu backend: ") + kern::op_name(call.op) + ": " + e.what());
  } catch (...) {
    return kern::fail(BRAID_ERR_INTERNAL,
                      std::string("cpu backend: ") + kern::op_name(call.op) + ": unknown exception");
  }
}

}  // namespace braid::cpu
