// braid-lenet-layers: times each kernel of one LeNet training step (batch 256) on its own, so a change to
// one kernel can be measured on a busy machine. Per kernel: the median wall time over the runs and the
// median process CPU time (user + system) per run. CPU time is the steadier figure under load; run the
// tool pinned to one core (`taskset -c 0`) to read it as single-core kernel time (on more cores it adds
// up the cores' time, spin-waits included).
//
//   braid-lenet-layers [--device NAME] [--runs N] [--only SUBSTRING]
//
//   --device NAME      the device to time (default cpu:0)
//   --runs N           timed runs per kernel (default 20)
//   --only SUBSTRING   only the kernels whose name contains SUBSTRING ("conv", "backward")
//
// An option's value may follow it (`--runs 5`) or be joined to it (`--runs=5`); tools/common/cli.h reads
// the command line; a bad one exits with status 2.
#include <sys/resource.h>

#include <algorithm>
#include <braid.hpp>
#include <chrono>
#include <climits>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"

namespace {

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  std::string device = "cpu:0", only;
  int runs = 20;
};

Options parse(int argc, char** argv) {
  enum { kDevice = CLI_FIRST, kRuns, kOnly };
  static const option options[] = {
      {"device", required_argument, nullptr, kDevice},
      {"runs", required_argument, nullptr, kRuns},
      {"only", required_argument, nullptr, kOnly},
      CLI_STANDARD_OPTIONS,
      {},
  };
  cli_parser cli =
      cli_parser_init("braid-lenet-layers",
                      "usage: braid-lenet-layers [--device NAME] [--runs N] [--only SUBSTRING] [--help] [--version]\n",
                      "Times each kernel of one LeNet training step (samples/lenet/README.md).\n", options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kDevice: o.device = cli.value; break;
      case kRuns: o.runs = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kOnly: o.only = cli.value; break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [device, only, runs] = parse(argc, argv);
  try {
    using braid::Tensor;
    braid::Context ctx;
    const braid::Device d = ctx.find_device(device);
    const int64_t B = 256;
    auto normal = [&](braid::List<int64_t> shape, double mean, double std) {
      return Tensor::random_normal(ctx, d, BRAID_FLOAT32, shape, mean, std);
    };
    // LeNet's activations and gradients at batch 256 (values do not matter for the timing).
    const Tensor x = normal({B, 1, 28, 28}, 0.5, 0.3);
    const Tensor w1 = normal({20, 1, 3, 3}, 0, 0.1), b1 = Tensor::zeros(ctx, d, BRAID_FLOAT32, {20});
    const Tensor w2 = normal({50, 20, 5, 5}, 0, 0.1), b2 = Tensor::zeros(ctx, d, BRAID_FLOAT32, {50});
    const braid::Pool2dOptions avg2{.kind = BRAID_POOL_AVG, .kernel = {2, 2}};
    const Tensor c1 = braid::conv2d(x, w1, b1), r1 = braid::relu(c1), p1 = braid::pool2d(r1, avg2);
    const Tensor c2 = braid::conv2d(p1, w2, b2), r2 = braid::relu(c2);
    const Tensor dc2 = normal({B, 50, 9, 9}, 0, 1), dp1 = normal({B, 20, 13, 13}, 0, 1),
                 dc1 = normal({B, 20, 26, 26}, 0, 1);
    braid_conv2d_params cp = BRAID_CONV2D_PARAMS_INIT;
    braid_pool2d_params pp = BRAID_POOL2D_PARAMS_INIT;
    pp.kind = BRAID_POOL_AVG, pp.kernel[0] = pp.kernel[1] = 2, pp.stride[0] = pp.stride[1] = 2;
    const int64_t x1_shape[4] = {B, 20, 13, 13}, w1_shape[4] = {20, 1, 3, 3}, w2_shape[4] = {50, 20, 5, 5};
    const auto* cpp = &cp;
    const auto* ppp = &pp;
    const std::vector<std::pair<std::string, std::function<Tensor()>>> kernels = {
        {"conv1 forward", [&] { return braid::conv2d(x, w1, b1); }},
        {"relu1 forward", [&] { return braid::relu(c1); }},
        {"pool1 forward", [&] { return braid::pool2d(r1, avg2); }},
        {"conv2 forward", [&] { return braid::conv2d(p1, w2, b2); }},
        {"relu2 forward", [&] { return braid::relu(c2); }},
        {"pool2 forward", [&] { return braid::pool2d(r2, avg2); }},
        {"conv2 backward data",
         [&] { return braid::detail::call(braid_conv2d_backward_data, dc2.get(), w2.get(), x1_shape, cpp); }},
        {"conv2 backward weight",
         [&] { return braid::detail::call(braid_conv2d_backward_weight, dc2.get(), p1.get(), w2_shape, cpp); }},
        {"conv2 bias gradient",
         [&] {
           return braid::sum(dc2, {0, 2, 3});
         }},
        {"pool1 backward", [&] { return braid::detail::call(braid_pool2d_backward, dp1.get(), r1.get(), ppp); }},
        {"relu1 backward (2 ops)", [&] { return dc1 * braid::binary(BRAID_BINARY_GREATER, c1, 0.0); }},
        {"conv1 backward weight",
         [&] { return braid::detail::call(braid_conv2d_backward_weight, dc1.get(), x.get(), w1_shape, cpp); }},
        {"conv1 bias gradient",
         [&] {
           return braid::sum(dc1, {0, 2, 3});
         }},
    };
    ctx.wait_all();
    std::printf("%-24s %12s %12s   (%s, %d runs)\n", "kernel", "wall ms", "cpu ms", device.c_str(), runs);
    for (const auto& [name, run] : kernels) {
      if (!only.empty() && name.find(only) == std::string::npos) continue;
      std::vector<double> wall, cpu;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_ms();
        run().wait_to_read();
        cpu.push_back(cpu_ms() - c0);
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("%-24s %12.3f %12.3f\n", name.c_str(), median(wall), median(cpu));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "braid-lenet-layers: %s\n", e.what());
    return 1;
  }
  return 0;
}
