// The host's callbacks: the plugin-side helper every backend shares (backends/common/host_callbacks.h),
// with a log that takes a std::string and prefixes the backend's name.
#pragma once
#include <string>

#include "host_callbacks.h"

namespace braid::cuda::host {
using ::braid::plugin::host::acquire;
using ::braid::plugin::host::release;
using ::braid::plugin::host::work_end;

inline void log(braid_log_level level, const std::string& message) noexcept {
  try {
    ::braid::plugin::host::log(level, ("cuda: " + message).c_str());
  } catch (...) {  // no memory for the message: drop it
  }
}
}  // namespace braid::cuda::host
