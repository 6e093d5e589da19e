// braid-bench: measures braid against what it must beat, in one run on one machine.
//
//   braid-bench SUITE... [--json] [--device cpu:1] [--repeat N]
//   braid-bench --list
//
// Every figure is the median of several timed runs after warm-ups. Comparisons (PyTorch through
// /usr/bin/python3, a direct OpenBLAS call) are measured in the same run, never quoted from elsewhere.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bench.h"

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
    {"async", "the chapter's loop y = x + 1 (2000x2000, 1000 times): wait per op vs one wait; vs PyTorch",
     suite_async},
    {"gemm", "2000x2000 float32 matmul through braid vs a direct OpenBLAS cblas_sgemm, GFLOP/s", suite_gemm},
    {"memory", "chapter's asynchrony and memory: MLP steps on Fashion-MNIST batches pushed without waits, peak memory "
               "with the default backpressure bound vs none",
     suite_memory},
    {"allreduce", "braid_allreduce over the CPU devices (or --devices), 4 KiB-256 MiB, every algorithm: busbw vs "
                  "one thread's memcpy",
     suite_allreduce},
    {"scaling", "samples/s of braid-lenet and braid-resnet on each device alone and on all of them (--devices, default "
                "cpu:0,cpu:1; even and weighted split) vs their sum and vs one CPU device with every core",
     suite_scaling},
    {"hw", "the hardware chapter on the host CPU: aligned vs unaligned loads, strides, row vs column order, "
           "a pointer-chasing latency curve and the cache sizes it shows vs sysfs, triad bandwidth on 1 and all "
           "cores; per braid device: 64 MiB host<->device copies, float32 vs float64 matmul",
     suite_hw},
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: braid-bench SUITE... [--json] [--device ID] [--devices LIST] [--batches N] [--repeat N]\n"
               "       braid-bench --list\n"
               "  SUITE        one or more of the suites below, or 'all'\n"
               "  --json       one JSON object per figure and line: {suite, name, value, unit[, baseline,\n"
               "               baseline_value, ratio]} (ratio = value / baseline_value); notes go to stderr\n"
               "  --device ID  device to measure (default cpu:0), as braid-info lists them\n"
               "  --devices L  devices of the allreduce and scaling suites, comma-separated (default: every CPU\n"
               "               device; scaling: cpu:0,cpu:1)\n"
               "  --batches N  scaling: LeNet batches per run (ResNet-18: N/20, at least 2)\n"
               "  --repeat N   timed runs per figure (default: per suite); the median is reported\n"
               "Suites:\n");
  for (const Suite& s : kSuites) std::fprintf(f, "  %-9s %s\n", s.name, s.description);
}

const Suite* find_suite(std::string_view name) {
  for (const Suite& s : kSuites)
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<const Suite*> selected;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      options.json = true;
    } else if (arg == "--list") {
      for (const Suite& s : kSuites) std::printf("%-8s %s\n", s.name, s.description);
      return 0;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("braid-bench %s\n", braid_version_string());
      return 0;
    } else if (arg == "--devices" && i + 1 < argc) {
      const std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        options.devices.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (arg == "--batches" && i + 1 < argc) {
      options.batches = std::atoi(argv[++i]);
      if (options.batches < 1) {
        std::fprintf(stderr, "braid-bench: --batches needs a positive count\n");
        return 2;
      }
    } else if ((arg == "--device" || arg == "--repeat") && i + 1 < argc) {
      if (arg == "--device") {
        options.device = argv[++i];
      } else {
        options.repeat = std::atoi(argv[++i]);
        if (options.repeat < 1) {
          std::fprintf(stderr, "braid-bench: --repeat needs a positive count\n");
          return 2;
        }
      }
    } else if (arg == "all") {
      for (const Suite& s : kSuites) selected.push_back(&s);
    } else if (const Suite* s = find_suite(arg)) {
      selected.push_back(s);
    } else {
      std::fprintf(stderr, "braid-bench: unknown suite or option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (selected.empty()) {
    usage(stderr);
    return 2;
  }

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
    std::printf("device %s (%s, %d compute units); %d host cores\n", run.info.id, run.info.name,
                run.info.compute_units, run.host_cores);
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
