#include "core/env.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace braid {

const char* env(const char* name) noexcept {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// strtoull would take "-1" as UINT64_MAX (which turns a bound off), saturate an overflowing number to
// the same, and accept leading blanks or a sign; and ignoring text that does not parse hides a typo.
// Each of these is an error: the application asked for something braid would not do.
uint64_t env_u64(const char* name, uint64_t fallback, const char* meaning) {
  const char* v = env(name);
  if (!v) return fallback;
  const char* last = v + std::strlen(v);
  uint64_t x = 0;
  auto [end, ec] = std::from_chars(v, last, x);
  if (ec == std::errc::result_out_of_range && end == last)
    fail(BRAID_ERR_INVALID_ARGUMENT, name, "=", v, " is too large: ", meaning, " is at most ", UINT64_MAX);
  if (ec != std::errc() || end != last || *v < '0' || *v > '9')
    fail(BRAID_ERR_INVALID_ARGUMENT, name, "='", v, "' is not ", meaning, " (a decimal number from 0 to ", UINT64_MAX,
         ")");
  return x;
}

}  // namespace braid
