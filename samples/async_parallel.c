/* The chapter's asynchronous-computation experiment in plain C, to show the C API (abi/braid.h):
 * y = x + 1 on a 2000x2000 tensor, N times, with a wait after every op and then with one wait at the
 * end. Every call returns a status; braid_last_error() says what went wrong.
 *
 *   braid-sample-async-c [N]     (default 1000)
 *
 * Exit status: 0 on success, 1 on an error, 2 for a bad command line.
 */
#define _POSIX_C_SOURCE 200809L
#include <braid.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

/* Ends the program with the runtime's message when a call fails. */
#define CHECK(call)                                                                                  \
  do {                                                                                               \
    braid_status status_ = (call);                                                                   \
    if (status_ != BRAID_OK) {                                                                       \
      fprintf(stderr, "%s failed: %s: %s\n", #call, braid_status_name(status_), braid_last_error()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Pushes y = x + 1 n times; waits after each op when wait_each, else once at the end. */
static double run_loop(braid_context ctx, braid_tensor x, int n, int wait_each) {
  const double start = now_seconds();
  for (int i = 0; i < n; ++i) {
    braid_tensor y = NULL;
    CHECK(braid_binary_scalar(BRAID_BINARY_ADD, x, 1.0, 0, &y)); /* enqueues and returns */
    if (wait_each) CHECK(braid_tensor_wait_to_read(y));
    CHECK(braid_tensor_release(y)); /* storage is freed once the op has run */
  }
  CHECK(braid_wait_all(ctx));
  return now_seconds() - start;
}

/* The command line: [N] and the standard --help and --version (tools/common/cli.h). Returns N. */
static int parse(int argc, char** argv) {
  static const struct option options[] = {CLI_STANDARD_OPTIONS, {0}};
  cli_parser cli = cli_parser_init(
      "braid-sample-async-c", "usage: braid-sample-async-c [N] [--help] [--version]\n",
      "The chapter's y = x + 1 loop, N times (default 1000), synchronous then asynchronous.\n", options);
  while (cli_next(&cli, argc, argv) != -1) {
    /* --help and --version end the program inside cli_next: nothing else comes back */
  }
  if (argc - optind > 1) cli_fail(&cli, "unexpected argument '%s'", argv[optind + 1]);
  return optind < argc ? (int)cli_parse_int(&cli, "N", argv[optind], 1, INT_MAX) : 1000;
}

int main(int argc, char** argv) {
  const int n = parse(argc, argv);
  braid_context ctx = NULL;
  braid_context_options options = BRAID_CONTEXT_OPTIONS_INIT; /* sets struct_size; NULL would do too */
  CHECK(braid_context_create(&options, &ctx));
  braid_device cpu0 = 0;
  CHECK(braid_context_find_device(ctx, "cpu:0", &cpu0));

  const int64_t shape[2] = {2000, 2000};
  braid_tensor x = NULL;
  CHECK(braid_full(ctx, cpu0, BRAID_FLOAT32, 2, shape, 1.0, &x));
  run_loop(ctx, x, 10, 1); /* warm-up */

  const double sync = run_loop(ctx, x, n, 1);
  const double async = run_loop(ctx, x, n, 0);
  printf("y = x + 1 on 2000x2000, %d times\n", n);
  printf("  wait after every op : %7.3f s\n", sync);
  printf("  one wait at the end : %7.3f s   (speed-up %.2fx)\n", async, sync / async);

  /* Check the answer, not just the clock: a corner of x + 1 holds 2. */
  braid_tensor y = NULL, corner = NULL;
  const int64_t begin[2] = {0, 0}, end[2] = {1, 4};
  float values[4];
  CHECK(braid_binary_scalar(BRAID_BINARY_ADD, x, 1.0, 0, &y));
  CHECK(braid_slice(y, begin, end, NULL, &corner));
  CHECK(braid_tensor_to_host(corner, values, sizeof values)); /* waits for both ops */
  for (int i = 0; i < 4; ++i) {
    if (values[i] != 2.0f) {
      fprintf(stderr, "wrong result: y[0][%d] = %g, expected 2\n", i, values[i]);
      return 1;
    }
  }

  CHECK(braid_tensor_release(corner));
  CHECK(braid_tensor_release(y));
  CHECK(braid_tensor_release(x));
  CHECK(braid_context_release(ctx)); /* waits for all work, then shuts the backends down */
  return 0;
}
