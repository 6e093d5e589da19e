/* newer_minor — a plugin of a newer minor version (BRAID_BACKEND_ABI_MINOR + 1): its table is larger
 * than the host's braid_backend_api, with one function appended that this host does not know. The
 * host must accept it (same major), read only the fields its own struct covers, and use the device. */
#include <stddef.h>

#include "fake_backend.h"

/* What braid_backend_api would look like one minor version later. */
typedef struct newer_backend_api {
  braid_backend_api v1_0;
  braid_status (*device_peer_access)(braid_backend_device a, braid_backend_device b,
                                     int32_t* out); /* one minor later */
} newer_backend_api;

static newer_backend_api g_api;

static braid_status newer_device_peer_access(braid_backend_device a, braid_backend_device b, int32_t* out) {
  (void)a;
  (void)b;
  fake_count(FAKE_UNEXPECTED_CALLS, 1); /* a 1.0 host does not know this function */
  if (out) *out = 0;
  return BRAID_OK;
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor; /* an older host minor is fine: it simply never calls the 1.1 function */
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api.v1_0, "newer_minor");
  fake_set_device_count(1);
  g_api.v1_0.struct_size = sizeof g_api;
  g_api.v1_0.abi_minor = BRAID_BACKEND_ABI_MINOR + 1;
  g_api.device_peer_access = newer_device_peer_access;
  *out = &g_api.v1_0;
  return BRAID_OK;
}
