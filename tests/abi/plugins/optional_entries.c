/* optional_entries — a plugin ABI 1.4 table that leaves every optional entry NULL: buffer_host_pointer
 * (so its devices say host_visible 0), queue_flush, shutdown, device_props_json, supports_call and
 * get_proc_address. The host must load it, use its defaults in their place (never calling a NULL
 * entry) and run uploads and downloads through queue_submit. */
#include <stddef.h>

#include "fake_backend.h"

static braid_backend_api g_api;
static braid_status (*g_device_props)(int32_t, braid_backend_device_props*);

/* Without buffer_host_pointer no buffer is host visible, as the ABI asks the props to say. */
static braid_status device_props(int32_t index, braid_backend_device_props* out) {
  braid_status st = g_device_props(index, out);
  if (st == BRAID_OK &&
      out->struct_size >= offsetof(braid_backend_device_props, host_visible) + sizeof out->host_visible)
    out->host_visible = 0;
  return st;
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "optional_entries");
  fake_set_device_count(1);
  g_device_props = g_api.device_props;
  g_api.device_props = device_props;
  g_api.buffer_host_pointer = NULL;
  g_api.queue_flush = NULL;
  g_api.shutdown = NULL;
  g_api.device_props_json = NULL;
  *out = &g_api;
  return BRAID_OK;
}
