// The host's callbacks (braid_host_api), as a plugin's threads see them. Plugin-side code shared by
// every backend plugin (compiled into each one, so each keeps its own copy of the state); it includes
// only abi/braid_backend.h, like the plugins themselves.
#pragma once
#include <string_view>

#include "braid_backend.h"

namespace braid::plugin::host {

// The whole of a plugin's braid_backend_query, whose function table is `api`: checks the host's major
// version and counts the query. The first query installs the host's callbacks; a later one must bring
// the same callbacks, since one process-wide table cannot serve two different hosts
// (BRAID_ERR_INVALID_STATE). It also names the plugin in its log lines. Thread-safe.
braid_status answer_query(uint32_t host_major, const braid_host_api* host, const braid_backend_api* api,
                          const braid_backend_api** out) noexcept;

// Each shutdown balances one query. The last runs `last` (may be NULL), then forgets the callbacks;
// an unbalanced release is ignored rather than underflowing. Thread-safe.
void release(void (*last)() = nullptr);

// Asks whether to run a submission; true when the host has no work_begin.
bool work_begin(void* token);
// Reports a submission's end; nothing for a NULL token.
void work_end(void* token, braid_status status, const char* message);
// Sends "<plugin>: message" (or "<plugin>: context: message") to the host's log; a line that cannot
// be composed (no memory) is dropped. The host prints only when asked (BRAID_LOG).
void log(braid_log_level level, std::string_view message) noexcept;
void log(braid_log_level level, std::string_view context, std::string_view message) noexcept;

}  // namespace braid::plugin::host
