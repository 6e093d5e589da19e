// Element types: sizes, names and which ones compute kernels accept.
#pragma once
#include <cstddef>

#include "braid.h"

namespace braid {

constexpr bool dtype_valid(int dtype) { return dtype >= 0 && dtype < BRAID_DTYPE_COUNT; }
constexpr bool dtype_is_float(braid_dtype d) { return d == BRAID_FLOAT32 || d == BRAID_FLOAT64; }
constexpr bool dtype_is_int(braid_dtype d) { return d == BRAID_INT32 || d == BRAID_INT64; }
size_t dtype_size(braid_dtype dtype) noexcept;
const char* dtype_name(braid_dtype dtype) noexcept;

// Throws BRAID_ERR_INVALID_ARGUMENT for a value outside the enum.
void check_dtype(int dtype, const char* what);

}  // namespace braid
