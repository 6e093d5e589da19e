// The host's callbacks (braid_host_api), as a plugin's threads see them. Plugin-side code shared by
// every backend plugin (compiled into each one, so each keeps its own copy of the state); it includes
// only abi/braid_backend.h, like the plugins themselves.
#pragma once
#include "braid_backend.h"

namespace braid::plugin::host {

// The plugin's query count, one per plugin library. acquire (each successful query) installs the
// callbacks of `api` on the first call and otherwise requires the same callbacks: one process-wide
// table cannot serve two different hosts (BRAID_ERR_INVALID_STATE). release (each shutdown) runs
// `last` (may be NULL), then forgets the callbacks, when it balances the first acquire; an unbalanced
// release is ignored rather than underflowing. Both are thread-safe.
braid_status acquire(const braid_host_api* api);
void release(void (*last)() = nullptr);

// Asks whether to run a submission; true when the host has no work_begin.
bool work_begin(void* token);
// Reports a submission's end; nothing for a NULL token.
void work_end(void* token, braid_status status, const char* message);
void log(braid_log_level level, const char* message);

}  // namespace braid::plugin::host
