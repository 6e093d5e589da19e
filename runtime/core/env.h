// Reading braid's environment variables: one place for what counts as set and as a valid number, so
// every variable refuses a typo the same way (an error naming the variable and its value).
#pragma once
#include <cstdint>

namespace braid {

// The variable's value, or NULL when it is unset or empty.
const char* env(const char* name) noexcept;
// A decimal number from 0 to UINT64_MAX, digits only; `fallback` when unset. Anything else throws
// BRAID_ERR_INVALID_ARGUMENT naming the variable, its value and `meaning`.
uint64_t env_u64(const char* name, uint64_t fallback, const char* meaning);

}  // namespace braid
