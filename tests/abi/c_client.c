/* c_client.c — a tiny application written in C11 (not C++) against abi/braid.h: proves the header is
 * valid C, that C sees the same struct layout as the C++ runtime (abi_layout.h's pins, compiled as
 * C), and that the basic flow works from C: create a context, braid_full on device 0, read it back,
 * release. Returns 0 on success, 1 on failure, 77 (skipped) when the context has no device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_layout.h" /* includes braid_backend.h and braid.h */
#include "braid.h"

#define CHECK_OK(expr)                                                                                     \
  do {                                                                                                     \
    braid_status st_ = (expr);                                                                             \
    if (st_ != BRAID_OK) {                                                                                 \
      fprintf(stderr, "c_client: %s failed: %s: %s\n", #expr, braid_status_name(st_), braid_last_error()); \
      return 1;                                                                                            \
    }                                                                                                      \
  } while (0)

static int run(void) {
  if (braid_version() != (((uint32_t)BRAID_ABI_MAJOR << 16) | BRAID_ABI_MINOR)) {
    fprintf(stderr, "c_client: braid_version() is 0x%08x\n", (unsigned)braid_version());
    return 1;
  }

  braid_context_options options = BRAID_CONTEXT_OPTIONS_INIT;
  braid_context ctx = NULL;
  CHECK_OK(braid_context_create(&options, &ctx));

  int32_t devices = 0;
  CHECK_OK(braid_context_device_count(ctx, &devices));
  if (devices < 1) {
    printf("c_client: no device (no backend plugin next to libbraid?); skipped\n");
    CHECK_OK(braid_context_release(ctx));
    return 77;
  }
  braid_device_info info = {0};
  info.struct_size = sizeof info;
  CHECK_OK(braid_context_device_info(ctx, 0, &info));

  const int64_t shape[2] = {3, 5};
  braid_tensor t = NULL;
  CHECK_OK(braid_full(ctx, 0, BRAID_FLOAT32, 2, shape, 0.75, &t));

  int32_t ndim = 0;
  int64_t got_shape[BRAID_MAX_DIMS] = {0};
  int64_t numel = 0;
  braid_dtype dtype = BRAID_FLOAT64;
  CHECK_OK(braid_tensor_ndim(t, &ndim));
  CHECK_OK(braid_tensor_shape(t, got_shape));
  CHECK_OK(braid_tensor_numel(t, &numel));
  CHECK_OK(braid_tensor_dtype(t, &dtype));
  if (ndim != 2 || got_shape[0] != 3 || got_shape[1] != 5 || numel != 15 || dtype != BRAID_FLOAT32) {
    fprintf(stderr, "c_client: wrong tensor metadata\n");
    return 1;
  }

  float values[15];
  memset(values, 0, sizeof values);
  CHECK_OK(braid_tensor_to_host(t, values, sizeof values));
  for (int i = 0; i < 15; ++i) {
    if (values[i] != 0.75f) {
      fprintf(stderr, "c_client: element %d is %g, want 0.75\n", i, (double)values[i]);
      return 1;
    }
  }

  /* An error from C: wrong byte count. */
  if (braid_tensor_to_host(t, values, sizeof values - 1) != BRAID_ERR_INVALID_ARGUMENT ||
      strstr(braid_last_error(), "braid_tensor_to_host") == NULL) {
    fprintf(stderr, "c_client: a wrong byte count was not reported\n");
    return 1;
  }

  /* info's strings are owned by the context: use them before releasing it. */
  printf("c_client: ok on %s (%s)\n", info.id, info.name);
  CHECK_OK(braid_tensor_release(t));
  CHECK_OK(braid_wait_all(ctx));
  CHECK_OK(braid_context_release(ctx));
  return 0;
}

int main(void) { return run(); }
