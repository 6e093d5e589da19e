/* abi_major2 — a plugin built for plugin ABI major 2: its query refuses a host of major 1 with
 * BRAID_ERR_ABI_MISMATCH and hands out no table. The host must list it, not loaded, with a reason
 * about the major version. */
#include "fake_backend.h"

#define PLUGIN_ABI_MAJOR 2u

static braid_backend_api g_api;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  if (!out) return BRAID_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (host_major != PLUGIN_ABI_MAJOR) return BRAID_ERR_ABI_MISMATCH;
  /* Not reached by a braid 1.x host. */
  fake_backend_fill(&g_api, "abi_major2");
  g_api.abi_major = PLUGIN_ABI_MAJOR;
  fake_host = host;
  *out = &g_api;
  return BRAID_OK;
}
