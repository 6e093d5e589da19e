// The host's callbacks (logging, work_begin/work_end), installed by the first query.
#pragma once
#include <string>

#include "braid_backend.h"

namespace braid::cuda::host {
void install(const braid_host_api* api);
void uninstall();
bool matches(const braid_host_api* api);
void log(braid_log_level level, const std::string& message) noexcept;
void work_end(void* token, braid_status status, const char* message) noexcept;
}  // namespace braid::cuda::host
