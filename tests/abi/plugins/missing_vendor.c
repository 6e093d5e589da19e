/* missing_vendor — a plugin whose vendor library is not installed. Like the CUDA and Vulkan plugins
 * it loads the vendor library lazily (in device_count, never in query) and, when it is missing, loads
 * fine with zero devices and a reason. */
#include <dlfcn.h>
#include <stddef.h>

#include "fake_backend.h"

#define VENDOR_LIBRARY "libbraid-nonexistent-vendor.so.1"

static braid_backend_api g_api;
static void* g_vendor = NULL;
static int g_vendor_tried = 0;

static braid_status mv_device_count(int32_t* out, const char** reason) {
  fake_count(FAKE_DEVICE_COUNT_CALLS, 1);
  if (!out) return BRAID_ERR_INVALID_ARGUMENT;
  if (!g_vendor_tried) {
    g_vendor_tried = 1;
    fake_count(FAKE_VENDOR_DLOPENS, 1);
    g_vendor = dlopen(VENDOR_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
  }
  if (!g_vendor) {
    *out = 0;
    if (reason) *reason = "vendor library " VENDOR_LIBRARY " not found";
    return BRAID_OK;
  }
  *out = 1; /* not reached on a sane system */
  if (reason) *reason = "";
  return BRAID_OK;
}

static void mv_shutdown(void) {
  if (g_vendor) dlclose(g_vendor);
  g_vendor = NULL;
  g_vendor_tried = 0;
  fake_shutdown();
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "missing_vendor");
  g_api.device_count = mv_device_count;
  g_api.shutdown = mv_shutdown;
  *out = &g_api;
  return BRAID_OK;
}
