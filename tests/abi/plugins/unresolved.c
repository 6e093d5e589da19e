/* unresolved — a plugin that needs a symbol nothing provides, so dlopen(RTLD_NOW) fails. The host
 * must list it with dlopen's message. */
#include "fake_backend.h"

extern int braid_fake_symbol_nobody_defines(void);

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  (void)host;
  if (out) *out = NULL;
  return host_major == 1 && braid_fake_symbol_nobody_defines() == 0 ? BRAID_OK : BRAID_ERR_INTERNAL;
}
