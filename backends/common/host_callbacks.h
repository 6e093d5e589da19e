// The host's callbacks (braid_host_api), as a plugin's threads see them. Plugin-side code shared by
// every backend plugin (compiled into each one, so each keeps its own copy of the state); it includes
// only abi/braid_backend.h, like the plugins themselves.
#pragma once
#include "braid_backend.h"

namespace braid::plugin::host {

// Installs the callbacks of `api` (NULL = none). Called by the first query.
void install(const braid_host_api* api);
// Whether `api` carries the installed callbacks. A later query must: one process-wide table cannot
// serve two different hosts.
bool matches(const braid_host_api* api);
// Forgets the callbacks (the last shutdown).
void uninstall();

// Asks whether to run a submission; true when the host has no work_begin.
bool work_begin(void* token);
// Reports a submission's end; nothing for a NULL token.
void work_end(void* token, braid_status status, const char* message);
void log(braid_log_level level, const char* message);

}  // namespace braid::plugin::host
