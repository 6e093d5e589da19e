/* holes — a table of the right version and size with one function missing (NULL). The host must
 * refuse it up front, naming the function, rather than crash when it first needs it. */
#include "fake_backend.h"

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "holes");
  g_api.queue_flush = NULL;
  *out = &g_api;
  return BRAID_OK;
}
