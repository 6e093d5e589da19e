/* extension — a plugin ABI 1.4 table with supports_call and get_proc_address. supports() says yes to
 * FILL in float32 only, and supports_call refuses every call after remembering it, so the host must
 * fail such an op with BRAID_ERR_UNSUPPORTED before anything is submitted. get_proc_address offers
 * one extension, EXT_LAST_CALL_NAME: it copies the last call supports_call saw and returns how many
 * it saw, so a test can check that the host passed the whole call. */
#include <pthread.h>
#include <string.h>

#include "fake_backend.h"

#define EXT_LAST_CALL_NAME "braid_ext_braidtest_last_call"
typedef int64_t (*ext_last_call_fn)(braid_kernel_call* out);

static braid_backend_api g_api;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static braid_kernel_call g_last;
static int64_t g_calls;

static int32_t supports(braid_kernel_op op, braid_dtype dtype) {
  return op == BRAID_KOP_FILL && dtype == BRAID_FLOAT32;
}

static int32_t supports_call(braid_backend_device device, const braid_kernel_call* call) {
  if (!device || !call) {
    fake_count(FAKE_UNEXPECTED_CALLS, 1);
    return 0;
  }
  pthread_mutex_lock(&g_mu);
  g_last = *call;
  ++g_calls;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

static int64_t ext_last_call(braid_kernel_call* out) {
  pthread_mutex_lock(&g_mu);
  if (out) *out = g_last;
  int64_t calls = g_calls;
  pthread_mutex_unlock(&g_mu);
  return calls;
}

static void* get_proc_address(const char* name) {
  if (name && strcmp(name, EXT_LAST_CALL_NAME) == 0) return (void*)ext_last_call;
  return NULL;
}

FAKE_EXPORT braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                             const braid_backend_api** out) {
  (void)host_minor;
  braid_status st = fake_query_common(host_major, host, out);
  if (st != BRAID_OK) return st;
  fake_backend_fill(&g_api, "extension");
  fake_set_device_count(1);
  g_api.supports = supports;
  g_api.supports_call = supports_call;
  g_api.get_proc_address = get_proc_address;
  *out = &g_api;
  return BRAID_OK;
}
