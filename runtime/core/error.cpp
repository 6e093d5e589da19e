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

BRAID_API const char* braid_status_name(braid_status status) {
  switch (status) {
    case BRAID_OK: return "BRAID_OK";
    case BRAID_ERR_INVALID_ARGUMENT: return "BRAID_ERR_INVALID_ARGUMENT";
    case BRAID_ERR_SHAPE: return "BRAID_ERR_SHAPE";
    case BRAID_ERR_DTYPE: return "BRAID_ERR_DTYPE";
    case BRAID_ERR_DEVICE: return "BRAID_ERR_DEVICE";
    case BRAID_ERR_OUT_OF_MEMORY: return "BRAID_ERR_OUT_OF_MEMORY";
    case BRAID_ERR_UNSUPPORTED: return "BRAID_ERR_UNSUPPORTED";
    case BRAID_ERR_NOT_FOUND: return "BRAID_ERR_NOT_FOUND";
    case BRAID_ERR_ABI_MISMATCH: return "BRAID_ERR_ABI_MISMATCH";
    case BRAID_ERR_INVALID_STATE: return "BRAID_ERR_INVALID_STATE";
    case BRAID_ERR_KERNEL: return "BRAID_ERR_KERNEL";
    case BRAID_ERR_IO: return "BRAID_ERR_IO";
    case BRAID_ERR_TIMEOUT: return "BRAID_ERR_TIMEOUT";
    case BRAID_ERR_INTERNAL: return "BRAID_ERR_INTERNAL";
  }
  return "BRAID_ERR_UNKNOWN";
}

}  // extern "C"
