// Reading a braid_kernel_call the same way in every plugin: the names in messages, the dtype a call is
// typed by, and dtype sets as bit masks for a plugin's table of what it implements.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "braid_backend.h"
#include "enum_value.h"

namespace braid::plugin {

// Whether a value a C caller passed is one of the enumerators. By reference: the value is read as its
// integer (enum_value.h), never loaded as the enum, which is undefined behaviour out of range.
// Inline: queue_submit checks every operand's dtype, once per op.
inline bool valid_op(const braid_kernel_op& op) noexcept {
  const long long o = enum_value(op);
  return o >= 0 && o < BRAID_KOP_COUNT;
}
inline bool valid_dtype(const braid_dtype& dtype) noexcept {
  const long long t = enum_value(dtype);
  return t >= 0 && t < BRAID_DTYPE_COUNT;
}

// Names for messages ("invalid" out of range). braid_dtype_name lives in libbraid, which a plugin
// does not link.
const char* op_name(const braid_kernel_op& op) noexcept;
const char* dtype_name(const braid_dtype& dtype) noexcept;
// Bytes per element; 0 out of range.
uint32_t dtype_size(const braid_dtype& dtype) noexcept;

// Creation ops are typed by their output, everything else by its first input; BRAID_DTYPE_COUNT when
// the call has no such operand.
braid_dtype call_dtype(const braid_kernel_call& call) noexcept;

// The message of a KERNELS submission whose call `index` (0-based, of `count`) failed with `message`:
// "kernels call 1 of 3 (softmax_cross_entropy): <message>". May throw std::bad_alloc.
std::string kernels_call_message(uint32_t index, uint32_t count, const braid_kernel_op& op, std::string_view message);

constexpr uint32_t dtype_bit(braid_dtype d) { return 1u << d; }
inline constexpr uint32_t kFloatTypes = dtype_bit(BRAID_FLOAT32) | dtype_bit(BRAID_FLOAT64);
inline constexpr uint32_t kNumericTypes = kFloatTypes | dtype_bit(BRAID_INT32) | dtype_bit(BRAID_INT64);
inline constexpr uint32_t kAllTypes =
    kNumericTypes | dtype_bit(BRAID_UINT8) | dtype_bit(BRAID_FLOAT16) | dtype_bit(BRAID_BFLOAT16);

// Whether (op, dtype) is in range and its bit is set in masks[op] (one mask per op).
bool in_support_table(const uint32_t (&masks)[BRAID_KOP_COUNT], const braid_kernel_op& op,
                      const braid_dtype& dtype) noexcept;

// Sets of braid_unary_op / braid_binary_op values as bit masks: how a plugin states once which
// elementwise ops it has integer versions of.
constexpr uint32_t op_bit(int op) { return 1u << op; }

// The integer elementwise kernels, one table for every plugin: these unary ops (the C API's integer
// ones, runtime/ops/elementwise.cpp) and every binary op (DIV truncates, POW squares; the C API
// sends neither for integers, but the CPU and CUDA kernels have them). A plugin that lacks some says
// so by masking them off.
inline constexpr uint32_t kIntegerUnaryOps = op_bit(BRAID_UNARY_NEG) | op_bit(BRAID_UNARY_ABS) |
                                             op_bit(BRAID_UNARY_RELU) | op_bit(BRAID_UNARY_SQUARE) |
                                             op_bit(BRAID_UNARY_SIGN);
inline constexpr uint32_t kIntegerBinaryOps = (1u << BRAID_BINARY_COUNT) - 1;

// The part of a call's support that (op, dtype) cannot say, for the elementwise kernels: the sub-op
// (i0) of a UNARY, BINARY or BINARY_SCALAR call must be valid, and an int32/int64 call's sub-op must
// be in int_unary (UNARY) or int_binary (BINARY, BINARY_SCALAR). Every other call passes.
bool elementwise_call_ok(const braid_kernel_call& call, uint32_t int_unary, uint32_t int_binary) noexcept;

}  // namespace braid::plugin
