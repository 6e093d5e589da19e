/* abi_table_major2 — a careless plugin of major 2: its query accepts any host and returns a table
 * whose abi_major is 2. The host must check the table's version itself and refuse it without calling
 * anything in it (device_count included). */
#include "fake_backend.h"

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_major;
  (void)host_minor;
  if (!out) return BRAID_ERR_INVALID_ARGUMENT;
  fake_backend_fill(&g_api, "abi_table_major2");
  g_api.abi_major = 2;
  g_api.abi_minor = 3;
  fake_host = host;
  fake_count(FAKE_QUERIES, 1);
  *out = &g_api;
  return BRAID_OK;
}
