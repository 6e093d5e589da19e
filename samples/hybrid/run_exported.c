/* Runs an exported model from plain C (docs/GRAPH.md, "Export and import"): loads a graph and its
 * parameters onto a chosen device and measures its accuracy on the Fashion-MNIST test set. No C++, no
 * Python: only abi/braid.h.
 *
 *   braid-run-exported PREFIX [--device NAME] [--data-dir DIR] [--test-batches N] [--json]
 *
 *   PREFIX          the model: PREFIX.json and PREFIX.safetensors (braid-lenet --export PREFIX writes
 *                   LeNet's forward pass for batches of 1000 images)
 *   --device NAME   "cpu:0" (default), "vulkan:0", "cuda:0"
 *   --data-dir DIR  the dataset's folder (default: Debian's dataset-fashion-mnist)
 *   --test-batches N  the first N batches of 1000 test images only (0 = all 10 000, the default), as
 *                   braid-lenet --test-batches N measures them
 *   --json          one JSON object on stdout: {"device": ..., "images": N, "accuracy": A}
 *
 * An option's value may follow it (--device vulkan:0) or be joined to it (--device=vulkan:0);
 * tools/common/cli.h reads the command line.
 *
 * Exit status: 0 on success, 1 on an error, 2 for a bad command line, 77 when the dataset is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"
#include "cli.h"

/* Prints the failed call and the library's message, and exits. */
static void check(braid_status s, const char* what) {
  if (s == BRAID_OK) return;
  fprintf(stderr, "braid-run-exported: %s: %s: %s\n", what, braid_status_name(s), braid_last_error());
  exit(s == BRAID_ERR_NOT_FOUND ? 77 : 1);
}

struct command_line {
  const char* prefix;
  const char* device_name;
  const char* data_dir;   /* NULL: the dataset's default folder */
  long long test_batches; /* 0: every batch */
  int json;
};

/* Reads the command line (tools/common/cli.h): PREFIX and the options, in any order. */
static struct command_line parse(int argc, char** argv) {
  enum { OPT_DEVICE = CLI_FIRST, OPT_DATA_DIR, OPT_TEST_BATCHES, OPT_JSON };
  static const struct option options[] = {{"device", required_argument, NULL, OPT_DEVICE},
                                          {"data-dir", required_argument, NULL, OPT_DATA_DIR},
                                          {"test-batches", required_argument, NULL, OPT_TEST_BATCHES},
                                          {"json", no_argument, NULL, OPT_JSON},
                                          CLI_STANDARD_OPTIONS,
                                          {0}};
  cli_parser cli = cli_parser_init(
      "braid-run-exported",
      "usage: braid-run-exported PREFIX [--device NAME] [--data-dir DIR] [--test-batches N] [--json] [--help] "
      "[--version]\n",
      "Measures the test-set accuracy of a model exported by braid-lenet --export PREFIX.\n", options);
  struct command_line cl = {NULL, "cpu:0", NULL, 0, 0};
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    if (opt == OPT_DEVICE)
      cl.device_name = cli.value;
    else if (opt == OPT_DATA_DIR)
      cl.data_dir = cli.value;
    else if (opt == OPT_TEST_BATCHES)
      cl.test_batches = cli_int(&cli, 0, 1000000);
    else if (opt == OPT_JSON)
      cl.json = 1;
  }
  if (optind == argc) cli_fail(&cli, "PREFIX is missing");
  if (argc - optind > 1) cli_fail(&cli, "unexpected argument '%s'", argv[optind + 1]);
  cl.prefix = argv[optind];
  if (strlen(cl.prefix) > 4000) cli_fail(&cli, "PREFIX is too long");
  return cl;
}

int main(int argc, char** argv) {
  const struct command_line cl = parse(argc, argv);
  const char* prefix = cl.prefix;
  const char* device_name = cl.device_name;
  char json_path[4096 + 16], params_path[4096 + 16];
  snprintf(json_path, sizeof json_path, "%s.json", prefix);
  snprintf(params_path, sizeof params_path, "%s.safetensors", prefix);

  braid_context ctx = NULL;
  check(braid_context_create(NULL, &ctx), "creating a context");
  braid_device dev = 0;
  if (braid_context_find_device(ctx, device_name, &dev) != BRAID_OK) {
    fprintf(stderr, "braid-run-exported: no device %s here: %s\n", device_name, braid_last_error());
    braid_context_release(ctx);
    return 77;
  }
  braid_graph model = NULL;
  if (braid_graph_load(ctx, dev, json_path, params_path, &model) != BRAID_OK) {
    fprintf(stderr, "braid-run-exported: loading %s: %s\n", prefix, braid_last_error());
    braid_context_release(ctx);
    return 1;
  }
  braid_graph_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  check(braid_graph_get_info(model, &info), "graph info");
  if (info.num_inputs != 1 || info.num_outputs != 1) {
    fprintf(stderr, "braid-run-exported: the model must take one input and give one output (logits)\n");
    return 1;
  }

  braid_dataset_options dopt = BRAID_DATASET_OPTIONS_INIT;
  dopt.split = BRAID_SPLIT_TEST;
  dopt.dir = cl.data_dir;
  braid_dataset test = NULL;
  check(braid_dataset_open(ctx, &dopt, &test), "opening the test set");
  braid_batch_iterator_options iopt = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  iopt.batch_size = 1000; /* the batch the model was exported for */
  iopt.shuffle = 0;
  iopt.device = dev;
  braid_batch_iterator it = NULL;
  check(braid_batch_iterator_create(test, &iopt, &it), "creating the test iterator");

  /* Every batch's correct predictions are summed on the device; the sum is read once at the end. */
  braid_tensor hits = NULL;
  int64_t images = 0;
  for (long long batch = 0; cl.test_batches == 0 || batch < cl.test_batches; ++batch) {
    braid_tensor x = NULL, y = NULL;
    check(braid_batch_iterator_next(it, &x, &y), "reading a batch");
    if (!x) break;
    int64_t n = 0;
    check(braid_tensor_numel(y, &n), "batch size");
    braid_tensor logits = NULL, pred = NULL, y64 = NULL, eq = NULL, eqf = NULL, count = NULL;
    check(braid_graph_run(model, 1, &x, 1, &logits), "running the model");
    check(braid_argmax(logits, 1, 0, &pred), "argmax");
    check(braid_cast(y, BRAID_INT64, &y64), "cast");
    check(braid_binary(BRAID_BINARY_EQUAL, pred, y64, &eq), "equal");
    check(braid_cast(eq, BRAID_FLOAT32, &eqf), "cast");
    check(braid_reduce(BRAID_REDUCE_SUM, eqf, 0, NULL, 0, &count), "sum");
    if (hits) {
      braid_tensor total = NULL;
      check(braid_binary(BRAID_BINARY_ADD, hits, count, &total), "add");
      braid_tensor_release(hits);
      braid_tensor_release(count);
      hits = total;
    } else {
      hits = count;
    }
    images += n;
    braid_tensor ts[] = {x, y, logits, pred, y64, eq, eqf};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; ++k) braid_tensor_release(ts[k]);
  }
  float correct = 0;
  if (hits) check(braid_tensor_to_host(hits, &correct, sizeof correct), "reading the result");
  const double accuracy = images ? correct / (double)images : 0.0;
  if (cl.json)
    printf("{\"device\": \"%s\", \"images\": %lld, \"accuracy\": %.4f}\n", device_name, (long long)images, accuracy);
  else
    printf("%s on %s: %lld test images, accuracy %.4f (%d kernels per batch, %d engine op)\n", prefix, device_name,
           (long long)images, accuracy, info.num_nodes, info.pushes_per_run);
  if (hits) braid_tensor_release(hits);
  braid_batch_iterator_release(it);
  braid_dataset_release(test);
  braid_graph_release(model);
  check(braid_context_release(ctx), "releasing the context");
  return 0;
}
