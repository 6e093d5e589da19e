#include "core/error.h"

namespace braid {
namespace {
// Thread-local by design (docs/ARCHITECTURE.md#c-abi): each thread sees the message of its own last
// failed call.
thread_local std::string t_last_error;
}  // namespace

void set_last_error(std::string message) noexcept {
  try {
    t_last_error = std::move(message);
  } catch (...) {}
}
void clear_last_error() noexcept { t_last_error.clear(); }
const char* last_error() noexcept { return t_last_error.c_str(); }
}  // namespace braid

extern "C" {

BRAID_API uint32_t braid_version(void) { return (uint32_t{BRAID_ABI_MAJOR} << 16) | BRAID_ABI_MINOR; }

#define BRAID_STR_(x) #x
#define BRAID_STR(x) BRAID_STR_(x)
BRAID_API const char* braid_version_string(void) {
  return BRAID_STR(BRAID_VERSION_MAJOR) "." BRAID_STR(BRAID_VERSION_MINOR) "." BRAID_STR(
      BRAID_VERSION_PATCH) " (ABI " BRAID_STR(BRAID_ABI_MAJOR) "." BRAID_STR(BRAID_ABI_MINOR) ")";
}
#undef BRAID_STR
#undef BRAID_STR_

BRAID_API const char* braid_last_error(void) { return braid::last_error(); }

BRAID_API const char* braid_status_name(braid_status status) { return braid::status_name(status); }

}  // extern "C"
