// braid-bench: measures braid against what it must beat, in one run on one machine.
//
//   braid-bench SUITE... [--json] [--device ID] [--devices LIST] [--batches N] [--repeat N]
//   braid-bench --list
//
// Options and suite names may come in any order; an option's value may follow it (`--repeat 5`) or be
// joined to it (`--repeat=5`): tools/common/cli.h reads the command line, and a bad one exits with
// status 2.
//
// Every figure is the median of several timed runs after warm-ups. Comparisons (PyTorch through
// /usr/bin/python3, a direct OpenBLAS call) are measured in the same run, never quoted from elsewhere.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bench.h"
#include "cli.h"

namespace {

using namespace braid::bench;

struct Suite {
  const char* name;
  const char* description;
  void (*run)(Run&);
};

constexpr Suite kSuites[] = {
    {"engine", "cost per tiny op (1x2 tensor, x + 1) pushed from C, from one and two threads; vs PyTorch from Python",
     suite_engine},
    {"async",
     "the chapter's loop y = x + 1 (1x2 10000 times, 2000x2000 1000 times): wait per op vs one wait; vs PyTorch",
     suite_async},
    {"gemm", "2000x2000 float32 matmul through braid vs a direct OpenBLAS cblas_sgemm, GFLOP/s", suite_gemm},
    {"memory",
     "chapter's asynchrony and memory: MLP steps on Fashion-MNIST batches pushed without waits, peak memory "
     "with the default backpressure bound vs none",
     suite_memory},
    {"allreduce",
     "braid_allreduce over the CPU devices (or --devices), 4 KiB-256 MiB, every algorithm: busbw vs "
     "one thread's memcpy",
     suite_allreduce},
    {"scaling",
     "samples/s of braid-lenet and braid-resnet on each device alone and on all of them (--devices, default "
     "cpu:0,cpu:1; even and weighted split) vs their sum and vs one CPU device with every core",
     suite_scaling},
    {"hw",
     "the hardware chapter on the host CPU: aligned vs unaligned loads, strides, row vs column order, "
     "a pointer-chasing latency curve and the cache sizes it shows vs sysfs, triad bandwidth on 1 and all "
     "cores; per braid device: 64 MiB host<->device copies, float32 vs float64 matmul",
     suite_hw},
    {"fusion",
     "graph mode's elementwise fusion on --device: an 8-kernel elementwise chain over 1024x1024 floats as one "
     "fused kernel vs imperative; the first run (preparing, compiling) apart",
     suite_fusion},
};

constexpr const char* kUsage =
    "usage: braid-bench SUITE... [--json] [--device ID] [--devices LIST] [--batches N] [--repeat N] [--ranks N]\n"
    "       braid-bench --list | --help | --version\n";

// --help's text after the usage: the options, then the suites from the table.
std::string help_text() {
  std::string text =
      "  SUITE        one or more of the suites below, or 'all'\n"
      "  --json       one JSON object per figure and line: {suite, name, value, unit[, baseline,\n"
      "               baseline_value, ratio]} (ratio = value / baseline_value); notes go to stderr\n"
      "  --device ID  device to measure (default cpu:0), as braid-info lists them\n"
      "  --devices L  devices of the allreduce and scaling suites, comma-separated (default: every CPU\n"
      "               device; scaling: cpu:0,cpu:1)\n"
      "  --batches N  scaling: LeNet batches per run (ResNet-18: N/20, at least 2)\n"
      "  --repeat N   timed runs per figure (default: per suite); the median is reported\n"
      "  --ranks N    allreduce: across N processes on this host (braid-run) through the Gloo plugin,\n"
      "               against Gloo's allreduce called directly and Open MPI's MPI_Allreduce\n"
      "  --list       the suites, one per line\n"
      "Suites:\n";
  for (const Suite& s : kSuites) {
    std::string name = s.name;
    name.resize(std::max<size_t>(name.size(), 9), ' ');
    text += "  " + name + " " + s.description + "\n";
  }
  return text;
}

const Suite* find_suite(std::string_view name) {
  for (const Suite& s : kSuites)
    if (name == s.name) return &s;
  return nullptr;
}

struct CommandLine {
  Options options;
  std::vector<const Suite*> suites;  // named by the positional arguments: at least one
};

CommandLine parse(int argc, char** argv) {
  enum { kJson = CLI_FIRST, kList, kDevice, kDevices, kBatches, kRepeat, kRanks };
  static const option table[] = {
      {"json", no_argument, nullptr, kJson},
      {"list", no_argument, nullptr, kList},
      {"device", required_argument, nullptr, kDevice},
      {"devices", required_argument, nullptr, kDevices},
      {"batches", required_argument, nullptr, kBatches},
      {"repeat", required_argument, nullptr, kRepeat},
      {"ranks", required_argument, nullptr, kRanks},
      CLI_STANDARD_OPTIONS,
      {},
  };
  static const std::string help = help_text();
  cli_parser cli = cli_parser_init("braid-bench", kUsage, help.c_str(), table);
  CommandLine line;
  Options& options = line.options;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kJson: options.json = true; break;
      case kList:
        for (const Suite& s : kSuites) std::printf("%-8s %s\n", s.name, s.description);
        std::exit(0);
      case kDevice: options.device = cli.value; break;
      case kDevices: options.devices = cli_list(cli, cli.value); break;
      case kBatches: options.batches = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kRepeat: options.repeat = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kRanks: options.ranks = static_cast<int>(cli_int(&cli, 2, 4096)); break;
    }
  }
  std::vector<const Suite*>& selected = line.suites;
  for (int i = optind; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "all") {
      for (const Suite& s : kSuites) selected.push_back(&s);
    } else if (const Suite* s = find_suite(name)) {
      selected.push_back(s);
    } else {
      cli_fail(&cli, "unknown suite '%s' (--list shows them)", argv[i]);
    }
  }
  if (selected.empty()) cli_fail(&cli, "no suite named (--list shows them)");
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [options, selected] = parse(argc, argv);

  Reporter reporter(options.json);
  Run run;
  run.options = options;
  run.out = &reporter;
  run.host_cores = affinity_cores();
  if (braid_status s = braid_context_create(nullptr, &run.ctx); s != BRAID_OK) {
    std::fprintf(stderr, "braid-bench: braid_context_create: %s: %s\n", braid_status_name(s), braid_last_error());
    return 1;
  }
  int failures = 0;
  run.info.struct_size = sizeof run.info;
  if (braid_context_find_device(run.ctx, options.device.c_str(), &run.device) != BRAID_OK ||
      braid_context_device_info(run.ctx, run.device, &run.info) != BRAID_OK) {
    std::fprintf(stderr, "braid-bench: no device '%s': %s (braid-info lists the devices)\n", options.device.c_str(),
                 braid_last_error());
    braid_context_release(run.ctx);
    return 1;
  }
  if (!options.json)
    std::printf("device %s (%s, %d compute units); %d host cores\n", run.info.id, run.info.name, run.info.compute_units,
                run.host_cores);
  for (const Suite* s : selected) {
    try {
      s->run(run);
    } catch (const Error& e) {
      // One failed suite does not hide the others' figures; the exit status still reports it.
      std::fprintf(stderr, "braid-bench: suite %s failed: %s\n", s->name, e.what());
      braid_wait_all(run.ctx);  // drain (and clear) what the failed suite left in flight
      ++failures;
    }
  }
  braid_context_release(run.ctx);
  return failures ? 1 : 0;
}
