// Errors inside the runtime are C++ exceptions carrying a braid_status; guard() turns them into a
// status and a thread-local message at the C boundary, so nothing ever throws across the ABI.
#pragma once
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include "braid.h"

namespace braid {

class Error : public std::exception {
 public:
  Error(braid_status status, std::string message) : status_(status), message_(std::move(message)) {}
  braid_status status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  braid_status status_;
  std::string message_;
};

// Concatenates anything streamable; the one string builder the runtime uses for messages.
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <class... Args>
[[noreturn]] void fail(braid_status status, Args&&... args) {
  throw Error(status, cat(std::forward<Args>(args)...));
}

// Checks a pointer argument the caller must provide.
inline void require(const void* p, const char* what) {
  if (!p) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
}

void set_last_error(std::string message) noexcept;
void clear_last_error() noexcept;
// What braid_last_error returns, for code inside libbraid.
const char* last_error() noexcept;
// What braid_status_name returns (inline: code built into tests beside libbraid uses it too).
inline const char* status_name(braid_status status) noexcept {
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

// Runs f at the ABI boundary: returns BRAID_OK, or the status of what it threw with the message
// prefixed by the API function's name.
template <class F>
braid_status guard(const char* function, F&& f) noexcept {
  try {
    std::forward<F>(f)();
    return BRAID_OK;
  } catch (const Error& e) {
    set_last_error(cat(function, ": ", e.what()));
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error(cat(function, ": out of host memory"));
    return BRAID_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(cat(function, ": internal error: ", e.what()));
    return BRAID_ERR_INTERNAL;
  } catch (...) {
    set_last_error(cat(function, ": internal error"));
    return BRAID_ERR_INTERNAL;
  }
}

}  // namespace braid
