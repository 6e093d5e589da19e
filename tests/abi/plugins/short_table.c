/* short_table — a table claiming major 1 whose struct_size is smaller than ABI 1.0's
 * braid_backend_api (it stops before `supports`). The host must refuse it. */
#include <stddef.h>

#include "fake_backend.h"

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "short_table");
  g_api.struct_size = (uint32_t)offsetof(braid_backend_api, supports);
  *out = &g_api;
  return BRAID_OK;
}
