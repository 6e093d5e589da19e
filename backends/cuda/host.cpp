#include "host.h"

#include <atomic>
#include <cstring>

namespace braid::cuda::host {
namespace {
// Global mutable state: the host's table, set by the first query and cleared by the last shutdown.
std::atomic<const braid_host_api*> g_api{nullptr};
}  // namespace

void install(const braid_host_api* api) { g_api.store(api); }
void uninstall() { g_api.store(nullptr); }
bool matches(const braid_host_api* api) { return g_api.load() == api; }

void log(braid_log_level level, const std::string& message) noexcept {
  const braid_host_api* api = g_api.load();
  if (api == nullptr || api->log == nullptr) return;
  try {
    api->log(level, ("cuda: " + message).c_str());
  } catch (...) {  // no memory for the message: drop it
  }
}

void work_end(void* token, braid_status status, const char* message) noexcept {
  const braid_host_api* api = g_api.load();
  if (token != nullptr && api != nullptr && api->work_end != nullptr) api->work_end(token, status, message);
}
}  // namespace braid::cuda::host
