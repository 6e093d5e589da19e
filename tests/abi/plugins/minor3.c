/* minor3 — a plugin built against plugin ABI 1.3: its table ends at device_props_json, before the 1.4
 * entries. The host must load it and never read supports_call or get_proc_address: the fields past
 * its struct_size hold functions that count an unexpected call. */
#include <stddef.h>

#include "fake_backend.h"

static braid_backend_api g_api;

static int32_t beyond_supports_call(braid_backend_device device, const braid_kernel_call* call) {
  (void)device;
  (void)call;
  fake_count(FAKE_UNEXPECTED_CALLS, 1);
  return 0;
}

static void* beyond_get_proc_address(const char* name) {
  (void)name;
  fake_count(FAKE_UNEXPECTED_CALLS, 1);
  return NULL;
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "minor3");
  fake_set_device_count(1);
  g_api.struct_size = (uint32_t)(offsetof(braid_backend_api, device_props_json) + sizeof g_api.device_props_json);
  g_api.abi_minor = 3;
  g_api.supports_call = beyond_supports_call;
  g_api.get_proc_address = beyond_get_proc_address;
  *out = &g_api;
  return BRAID_OK;
}
