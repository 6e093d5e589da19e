/* query_fails — braid_backend_query returns an error other than an ABI mismatch. */
#include "fake_backend.h"

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_major;
  (void)host_minor;
  (void)host;
  if (out) *out = NULL;
  return BRAID_ERR_INTERNAL;
}
