/* no_query — a shared library with the plugin file name but without braid_backend_query (say, a
 * stray file or a build of the wrong target). The host must list it as "not a braid plugin". */
#include "fake_backend.h"

FAKE_EXPORT int braid_fake_not_a_plugin(void) { return 42; }

/* A near miss of the real symbol name, to make sure the host looks up the exact one. */
FAKE_EXPORT braid_status braid_backend_query_v0(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                                const braid_backend_api** out) {
  (void)host_major;
  (void)host_minor;
  (void)host;
  if (out) *out = NULL;
  return BRAID_ERR_INTERNAL;
}
