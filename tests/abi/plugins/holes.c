/* holes — a plugin ABI 1.3 table of the right size with one function missing (NULL). queue_flush is
 * optional only from 1.4 on, and a table declaring 1.3 is held to 1.3's rule (every 1.0 entry), so
 * the host must refuse it up front, naming the function, rather than crash when it first needs it.
 * (A 1.4 table with a NULL required entry: required_hole.c.) */
#include "fake_backend.h"

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "holes");
  g_api.abi_minor = 3;
  g_api.queue_flush = NULL;
  *out = &g_api;
  return BRAID_OK;
}
