// Element types: sizes, names and which ones compute kernels accept.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "braid.h"

namespace braid {

constexpr bool dtype_valid(int dtype) { return dtype >= 0 && dtype < BRAID_DTYPE_COUNT; }
constexpr bool dtype_is_float(braid_dtype d) { return d == BRAID_FLOAT32 || d == BRAID_FLOAT64; }
constexpr bool dtype_is_int(braid_dtype d) { return d == BRAID_INT32 || d == BRAID_INT64; }
// Any integer dtype, uint8 included: uint8 has no arithmetic kernels (a storage type), but where an
// integer computes in float32 (true division, a non-integral scalar) uint8 does too.
constexpr bool dtype_is_integer(braid_dtype d) { return dtype_is_int(d) || d == BRAID_UINT8; }
constexpr bool dtype_is_floating(braid_dtype d) {  // the storage-only 16-bit floats included
  return dtype_is_float(d) || d == BRAID_FLOAT16 || d == BRAID_BFLOAT16;
}
// bool is stored as uint8 holding 0 or 1, and kernels see it so (a buffer view of a bool tensor says
// uint8): plugins need no bool kernels, and the ops that give bool results write 0 or 1 through the
// uint8 casts every backend has (docs/ARCHITECTURE.md, "Booleans").
constexpr braid_dtype kernel_dtype(braid_dtype d) noexcept { return d == BRAID_BOOL ? BRAID_UINT8 : d; }
// NumPy's and PyTorch's kinds in promotion order: bool < integer < floating.
constexpr int dtype_category(braid_dtype d) noexcept { return d == BRAID_BOOL ? 0 : dtype_is_floating(d) ? 2 : 1; }
size_t dtype_size(braid_dtype dtype) noexcept;
// PyTorch's torch.promote_types for two tensors: the higher category wins (floating over integer over
// bool), else the wider of the two (uint8 < int32 < int64, float16 and bfloat16 < float32 < float64),
// and float16 with bfloat16 gives float32.
braid_dtype promote_types(braid_dtype a, braid_dtype b) noexcept;
// PyTorch's result type of two tensor operands (torch.result_type, 1.13): promote_types, except that a
// 0-d operand beside one with dimensions decides only when it is of a higher category (floating over
// integer over bool): float32 (3,) + float64 () is float32, int32 (3,) + int64 () is int32, int32 (3,) +
// float64 () is float64, bool (3,) + int64 () is int64.
braid_dtype result_type(braid_dtype a, bool a_is_0d, braid_dtype b, bool b_is_0d) noexcept;
const char* dtype_name(braid_dtype dtype) noexcept;

// The integer a C caller passed where the ABI names an enum. C may pass any int there, and loading an
// out-of-range value as a C++ enum is undefined, so every enum from the ABI is validated through this.
template <class E>
int32_t enum_int(const E& e) noexcept {
  static_assert(sizeof(E) == sizeof(int32_t));
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Throws BRAID_ERR_INVALID_ARGUMENT for a value outside the enum.
void check_dtype(const braid_dtype& dtype, const char* what);

}  // namespace braid
