/* Consumer of an installed braid through pkg-config and abi/braid.h (see ../README.md).
 *   consumer-c LIBDIR BACKEND...
 * Lists the backends and devices; fails unless every BACKEND was found in LIBDIR (the installed
 * plugins, next to the installed libbraid); then computes on cpu:0 and checks the result. */
#include <braid.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    braid_status s_ = (call);                                                         \
    if (s_ != BRAID_OK) {                                                             \
      printf("FAIL: %s: %s: %s\n", #call, braid_status_name(s_), braid_last_error()); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: consumer-c LIBDIR BACKEND...\n");
    return 2;
  }
  char libdir[4096];
  snprintf(libdir, sizeof libdir, "%s/", argv[1]);
  int failures = 0;
  printf("braid %s\n", braid_version_string());

  braid_context ctx;
  CHECK(braid_context_create(NULL, &ctx));
  int32_t nb = 0, nd = 0;
  CHECK(braid_context_backend_count(ctx, &nb));
  for (int32_t i = 0; i < nb; ++i) {
    braid_backend_info b = {.struct_size = sizeof b};
    CHECK(braid_context_backend_info(ctx, i, &b));
    printf("backend %s: %s, loaded %d, %d device(s)\n", b.name, b.path, b.loaded, b.device_count);
  }
  for (int a = 2; a < argc; ++a) {
    int found = 0;
    for (int32_t i = 0; i < nb; ++i) {
      braid_backend_info b = {.struct_size = sizeof b};
      CHECK(braid_context_backend_info(ctx, i, &b));
      if (strcmp(b.name, argv[a]) == 0 && strncmp(b.path, libdir, strlen(libdir)) == 0) found = 1;
    }
    if (!found) {
      printf("FAIL: backend %s was built but not found in %s\n", argv[a], libdir);
      ++failures;
    }
  }
  CHECK(braid_context_device_count(ctx, &nd));
  for (braid_device d = 0; d < nd; ++d) {
    braid_device_info info = {.struct_size = sizeof info};
    CHECK(braid_context_device_info(ctx, d, &info));
    printf("device %s: %s\n", info.id, info.name);
  }

  /* ones(2, 3) + 1: six 2s, summing to 12. */
  braid_device cpu0;
  CHECK(braid_context_find_device(ctx, "cpu:0", &cpu0));
  const int64_t shape[2] = {2, 3};
  braid_tensor x, y;
  CHECK(braid_full(ctx, cpu0, BRAID_FLOAT32, 2, shape, 1.0, &x));
  CHECK(braid_binary_scalar(BRAID_BINARY_ADD, x, 1.0, 0, &y));
  float out[6];
  CHECK(braid_tensor_to_host(y, out, sizeof out));
  float sum = 0;
  for (int i = 0; i < 6; ++i) sum += out[i];
  printf("add on cpu:0: %s\n", sum == 12.0f ? "ok" : "FAIL: wrong result");
  if (sum != 12.0f) ++failures;
  braid_tensor_release(y);
  braid_tensor_release(x);
  braid_context_release(ctx);
  return failures == 0 ? 0 : 1;
}
