/* older_minor — a plugin built against plugin ABI 1.0: its table ends at shutdown (no
 * device_props_json). The host must accept it, never read past its struct_size, and report "{}" as the
 * device's extra properties. The field past the table is filled with a function that counts an
 * unexpected call, so a host that reads beyond struct_size is caught. */
#include <stddef.h>

#include "fake_backend.h"

static braid_backend_api g_api;

static const char* beyond_the_table(int32_t index) {
  (void)index;
  fake_count(FAKE_UNEXPECTED_CALLS, 1);
  return "{\"read_past_struct_size\":true}";
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "older_minor");
  fake_set_device_count(1);
  g_api.struct_size = (uint32_t)(offsetof(braid_backend_api, shutdown) + sizeof g_api.shutdown);
  g_api.abi_minor = 0;
  g_api.device_props_json = beyond_the_table;
  *out = &g_api;
  return BRAID_OK;
}
