/* fake_backend.h — a minimal in-process backend shared by the fake plugins of the ABI tests.
 *
 * Each fake plugin (one .c file here, built as libbraid-backend-<name>.so into the test plugin
 * directory) fills a braid_backend_api with these functions and then breaks or extends it in the one
 * way its test is about. The device is plain host memory: buffers come from aligned_alloc, a queue
 * runs each submission inline inside queue_submit (work_begin, the copy, work_end, then the signal),
 * and timeline semaphores are a counter under a mutex/condvar. supports() is 0 for every op, so the
 * host never sends a kernel; copies (uploads, downloads) and markers work.
 *
 * Because submissions run inline, a semaphore notification may fire inside queue_submit; that is
 * fine for the tests (the fake device is never mixed with another backend's work in one op chain).
 *
 * Every fake plugin also exports braid_fake_counters() so a test that keeps the plugin mapped (by
 * dlopen'ing the same file) can check what the host called: balanced query/shutdown, no leaked
 * devices, queues, semaphores or buffers, and no calls through fields the host must not read.
 */
#ifndef BRAID_TESTS_FAKE_BACKEND_H_
#define BRAID_TESTS_FAKE_BACKEND_H_

#include <stdint.h>

#include "braid_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))

/* Indices into the array filled by braid_fake_counters. */
enum fake_counter {
  FAKE_QUERIES = 0,        /* successful braid_backend_query calls */
  FAKE_SHUTDOWNS,          /* shutdown calls */
  FAKE_DEVICE_COUNT_CALLS, /* device_count calls */
  FAKE_LIVE_DEVICES,       /* opened and not yet closed */
  FAKE_LIVE_QUEUES,
  FAKE_LIVE_SEMAPHORES,
  FAKE_LIVE_BUFFERS,
  FAKE_SUBMISSIONS,      /* queue_submit calls that were accepted */
  FAKE_UNEXPECTED_CALLS, /* calls the host should never make (kernels, fields beyond its struct) */
  FAKE_VENDOR_DLOPENS,   /* missing_vendor: attempts to load the vendor library */
  FAKE_COUNTER_COUNT
};

/* Name of the exported counter function and its type (for dlsym from the tests). */
#define FAKE_COUNTERS_SYMBOL "braid_fake_counters"
typedef void (*fake_counters_fn)(int64_t* out, int32_t count);

#ifndef __cplusplus
/* ---- for the plugins only --------------------------------------------------------------------- */

/* The host API remembered by fake_query_common. */
extern const braid_host_api* fake_host;

/* Fills every function of *api with the fake implementation; struct_size = sizeof(braid_backend_api),
 * abi_major/minor = this header's, name = name. The device count comes from fake_set_device_count. */
void fake_backend_fill(braid_backend_api* api, const char* name);
void fake_set_device_count(int32_t count);

/* The common part of a query: checks arguments and the host's major version, remembers host and
 * counts the query. Returns BRAID_OK or the status the query must return. */
braid_status fake_query_common(uint32_t host_major, const braid_host_api* host, const braid_backend_api** out);

/* The default implementations that plugins may wrap. */
braid_status fake_device_count(int32_t* out, const char** reason);
void fake_shutdown(void);

void fake_count(enum fake_counter counter, int64_t delta);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* BRAID_TESTS_FAKE_BACKEND_H_ */
