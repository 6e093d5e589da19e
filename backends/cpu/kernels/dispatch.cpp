// run_kernel and kernel_supports: the one table of what the CPU backend implements, and the routing
// from op to the file that implements it.
#include <exception>
#include <new>

#include "common.h"

namespace braid::cpu {
namespace kern {

const char* dtype_name(braid_dtype dt) {
  switch (dt) {
    case BRAID_FLOAT32: return "float32";
    case BRAID_FLOAT64: return "float64";
    case BRAID_INT32: return "int32";
    case BRAID_INT64: return "int64";
    case BRAID_UINT8: return "uint8";
    case BRAID_FLOAT16: return "float16";
    case BRAID_BFLOAT16: return "bfloat16";
    default: return "invalid";
  }
}

const char* op_name(braid_kernel_op op) {
  static constexpr const char* names[BRAID_KOP_COUNT] = {
      "fill",       "arange",     "random_uniform",        "random_normal", "copy",        "unary",
      "binary",     "binary_scalar", "reduce",            "argmax",        "matmul",      "conv2d",
      "pool2d",     "batch_norm", "softmax",               "softmax_cross_entropy",         "dropout",
      "sgd_update", "sgd_momentum", "adam_update", "conv2d_bwd_data", "conv2d_bwd_weight",
      "pool2d_bwd", "batch_norm_bwd", "softmax_cross_entropy_bwd"};
  return op >= 0 && op < BRAID_KOP_COUNT ? names[op] : "invalid";
}

KernelResult unsupported(braid_kernel_op op, braid_dtype dt, const char* detail) {
  std::string m = std::string("cpu backend: ") + op_name(op) + " is not implemented for dtype " + dtype_name(dt);
  if (detail) m += std::string(" (") + detail + ")";
  return fail(BRAID_ERR_UNSUPPORTED, std::move(m));
}

namespace {

constexpr uint32_t bit(braid_dtype d) { return 1u << d; }
constexpr uint32_t kFloat = bit(BRAID_FLOAT32) | bit(BRAID_FLOAT64);
constexpr uint32_t kNumeric = kFloat | bit(BRAID_INT32) | bit(BRAID_INT64);
constexpr uint32_t kAll = kNumeric | bit(BRAID_UINT8) | bit(BRAID_FLOAT16) | bit(BRAID_BFLOAT16);

// Dtype masks per op: the single source of truth for kernel_supports and run_kernel's guard. Ops with
// sub-ops (UNARY on ints: NEG/ABS/RELU/SQUARE/SIGN; REDUCE on ints: SUM/MAX/MIN) refine it at run time.
constexpr uint32_t kSupport[BRAID_KOP_COUNT] = {
    /* FILL */ kAll,
    /* ARANGE */ kNumeric,
    /* RANDOM_UNIFORM */ kFloat,
    /* RANDOM_NORMAL */ kFloat,
    /* COPY */ kAll,
    /* UNARY */ kNumeric,
    /* BINARY */ kNumeric,
    /* BINARY_SCALAR */ kNumeric,
    /* REDUCE */ kNumeric,
    /* ARGMAX */ kNumeric,
    /* MATMUL */ kFloat,
    /* CONV2D */ kFloat,
    /* POOL2D */ kFloat,
    /* BATCH_NORM */ kFloat,
    /* SOFTMAX */ kFloat,
    /* SOFTMAX_CE */ kFloat,
    /* DROPOUT */ kFloat,
    /* SGD_UPDATE */ kFloat,
    /* SGD_MOMENTUM */ kFloat,
    /* ADAM_UPDATE */ kFloat,
    /* CONV2D_BWD_DATA */ kFloat,
    /* CONV2D_BWD_WEIGHT */ kFloat,
    /* POOL2D_BWD */ kFloat,
    /* BATCH_NORM_BWD */ kFloat,
    /* SOFTMAX_CE_BWD */ kFloat,
};

using KernelFn = KernelResult (*)(const Call&, Exec&);
constexpr KernelFn kKernels[BRAID_KOP_COUNT] = {
    k_fill,   k_arange,   k_random,  k_random,     k_copy,       k_unary,      k_binary,
    k_binary_scalar,      k_reduce,  k_argmax,     k_matmul,     k_conv2d,     k_pool2d,
    k_batch_norm,         k_softmax, k_softmax_ce, k_dropout,    k_sgd,        k_sgd_momentum,
    k_adam,   k_conv2d_bwd_data,    k_conv2d_bwd_weight, k_pool2d_bwd, k_batch_norm_bwd, k_softmax_ce_bwd,
};

// Creation ops are typed by their output, everything else by its first input.
braid_dtype call_dtype(const braid_kernel_call& call) {
  switch (call.op) {
    case BRAID_KOP_FILL:
    case BRAID_KOP_ARANGE:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL:
      return call.num_outputs > 0 ? call.outputs[0].dtype : BRAID_DTYPE_COUNT;
    default:
      return call.num_inputs > 0 ? call.inputs[0].dtype : BRAID_DTYPE_COUNT;
  }
}

}  // namespace
}  // namespace kern

bool kernel_supports(braid_kernel_op op, braid_dtype dtype) {
  return op >= 0 && op < BRAID_KOP_COUNT && dtype >= 0 && dtype < BRAID_DTYPE_COUNT &&
         (kern::kSupport[op] >> dtype & 1u) != 0;
}

KernelResult run_kernel(const braid_kernel_call& call, Exec& exec) {
  const braid_dtype dt = kern::call_dtype(call);
  if (!kernel_supports(call.op, dt)) return kern::unsupported(call.op, dt);
  // Kernels only throw for failed scratch allocations (std::vector), or if the arena rethrows one
  // from a worker; nothing crosses the ABI.
  try {
    return kern::kKernels[call.op](call, exec);
  } catch (const std::bad_alloc&) {
    return kern::fail(BRAID_ERR_OUT_OF_MEMORY, std::string("cpu backend: out of memory for scratch in ") +
                                                   kern::op_name(call.op));
  } catch (const std::exception& e) {
    return kern::fail(BRAID_ERR_INTERNAL, std::string("cpu backend: ") + kern::op_name(call.op) + ": " + e.what());
  } catch (...) {
    return kern::fail(BRAID_ERR_INTERNAL, std::string("cpu backend: ") + kern::op_name(call.op) + ": unknown exception");
  }
}

}  // namespace braid::cpu
