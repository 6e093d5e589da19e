/* tiny_table — a table whose struct_size (4) does not even cover its abi_major and abi_minor. The
 * bytes after it, inside this plugin's own buffer so that reading them is not itself a crash, hold
 * nonsense versions: the host must refuse the table from its size and report ABI 0.0, never them
 * (issue 31: the host printed "plugin ABI 0.1698965536" from bytes past the table's end). */
#include <stdint.h>
#include <string.h>

#include "fake_backend.h"

static union {
  braid_backend_api api;
  uint32_t words[4];
} g_table;

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  memset(&g_table, 0, sizeof g_table);
  g_table.words[0] = 4;           /* struct_size: only itself */
  g_table.words[1] = 0;           /* where abi_major would be, past the table's end */
  g_table.words[2] = 1698965536u; /* where abi_minor would be */
  *out = &g_table.api;
  return BRAID_OK;
}
