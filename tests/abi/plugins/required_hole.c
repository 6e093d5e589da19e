/* required_hole — a plugin ABI 1.4 table with an optional entry (queue_flush) and a required one
 * (semaphore_fail) NULL. The host must refuse it, naming the required entry only. */
#include "fake_backend.h"

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "required_hole");
  fake_set_device_count(1);
  g_api.queue_flush = NULL;
  g_api.semaphore_fail = NULL;
  *out = &g_api;
  return BRAID_OK;
}
