// The chapter's hybrid-programming experiment (d2l "Compilers and Interpreters"): the MLP
// Dense(256, relu) -> Dense(128, relu) -> Dense(2) on a 1x512 input, called 1000 times and then
// waited for, imperatively and hybridized (traced once, then run as one graph per call).
//
//   braid-mlp-hybrid [--device NAME] [--calls N] [--repeat N] [--json] [--export PREFIX]
//
//   --device NAME    "cpu:0" (default), "vulkan:0", "cuda:0"
//   --calls N        forward calls per timing (default 1000, the chapter's)
//   --repeat N       timings of each mode; the best is reported (default 5)
//   --json           one JSON object on stdout
//   --export PREFIX  also save the hybridized graph: PREFIX.json and PREFIX.safetensors
//
// An option's value may follow it (`--calls 100`) or be joined to it (`--calls=100`); tools/common/cli.h
// reads the command line; a bad one exits with status 2.
//
// samples/hybrid/mlp_compare.py runs this and PyTorch eager and TorchScript in one run and prints the
// chapter's table with the ratios.
#include <braid.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"

namespace {

using braid::Tensor;

struct Options {
  std::string device = "cpu:0";
  int calls = 1000;
  int repeat = 5;
  bool json = false;
  std::string export_prefix;
};

Options parse(int argc, char** argv) {
  enum { kDevice = CLI_FIRST, kCalls, kRepeat, kJson, kExport };
  static const option options[] = {
      {"device", required_argument, nullptr, kDevice},
      {"calls", required_argument, nullptr, kCalls},
      {"repeat", required_argument, nullptr, kRepeat},
      {"json", no_argument, nullptr, kJson},
      {"export", required_argument, nullptr, kExport},
      CLI_STANDARD_OPTIONS,
      {},
  };
  cli_parser cli = cli_parser_init("braid-mlp-hybrid",
                                   "usage: braid-mlp-hybrid [--device NAME] [--calls N] [--repeat N] [--json] "
                                   "[--export PREFIX] [--help] [--version]\n",
                                   "Times the chapter's MLP imperative and hybridized (docs/GRAPH.md).\n", options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kDevice: o.device = cli.value; break;
      case kCalls: o.calls = static_cast<int>(cli_int(&cli, 1, 100000000)); break;
      case kRepeat: o.repeat = static_cast<int>(cli_int(&cli, 1, 100000000)); break;
      case kJson: o.json = true; break;
      case kExport: o.export_prefix = cli.value; break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  return o;
}

// Dense layers as the chapter builds them: y = x W + b, with ReLU on the hidden ones.
struct Mlp {
  std::vector<Tensor> w, b;
  Mlp(const braid::Context& ctx, braid::Device dev) {
    const int64_t dims[] = {512, 256, 128, 2};
    for (int l = 0; l < 3; ++l) {
      w.push_back(Tensor::random_normal(ctx, dev, BRAID_FLOAT32, {dims[l], dims[l + 1]}, 0.0, 0.01));
      b.push_back(Tensor::zeros(ctx, dev, BRAID_FLOAT32, {dims[l + 1]}));
    }
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = x;
    for (size_t l = 0; l < 3; ++l) {
      h = braid::matmul(h, w[l]) + b[l];
      if (l < 2) h = braid::relu(h);
    }
    return h;
  }
};

// The chapter's timing: `calls` calls, then a wait for all of them. Also the time the calls alone
// took (the host's share: what the program spends issuing work; the rest is waiting for the device).
struct Timing {
  double seconds = 1e300, issue_seconds = 1e300;
};

template <class F>
Timing best_of(const braid::Context& ctx, const Options& o, F&& call) {
  Timing best;
  for (int r = 0; r < o.repeat; ++r) {
    ctx.wait_all();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    ctx.wait_all();
    const auto t2 = std::chrono::steady_clock::now();
    best.seconds = std::min(best.seconds, std::chrono::duration<double>(t2 - t0).count());
    best.issue_seconds = std::min(best.issue_seconds, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    braid::Context ctx;
    const braid::Device dev = ctx.find_device(o.device);
    const Mlp net(ctx, dev);
    const Tensor x = Tensor::random_normal(ctx, dev, BRAID_FLOAT32, {1, 512}, 0.0, 1.0);
    braid::Hybrid hybrid(ctx, 1, 1, [&](std::span<const Tensor> in) { return std::vector<Tensor>{net(in[0])}; });
    const std::vector<Tensor> in = {x};
    // Both results agree before anything is timed (the first hybrid call traces).
    const std::vector<float> want = net(x).to_vector<float>();
    const std::vector<float> first = hybrid(in)[0].to_vector<float>();
    const std::vector<float> again = hybrid(in)[0].to_vector<float>();
    double diff = 0;
    for (size_t i = 0; i < want.size(); ++i)
      diff = std::max({diff, double(std::abs(first[i] - want[i])), double(std::abs(again[i] - want[i]))});
    if (diff > 1e-5) {
      std::fprintf(stderr, "braid-mlp-hybrid: hybridized and imperative results differ by %g\n", diff);
      return 1;
    }
    const braid::Graph graph = hybrid.graph(in);
    const braid_graph_info info = graph.info();
    const Timing imperative = best_of(ctx, o, [&] { (void)net(x); });
    const Timing hybridized = best_of(ctx, o, [&] { (void)hybrid(in); });
    if (!o.export_prefix.empty()) graph.save(o.export_prefix + ".json", o.export_prefix + ".safetensors");
    const std::string name = ctx.device_info(dev).name;
    if (o.json) {
      std::printf(
          "{\"device\": \"%s\", \"device_name\": \"%s\", \"calls\": %d, \"imperative_s\": %.6f, \"hybridized_s\": "
          "%.6f, "
          "\"imperative_issue_s\": %.6f, \"hybridized_issue_s\": %.6f, "
          "\"kernels\": %d, \"pushes_per_call\": %d, \"max_abs_diff\": %g}\n",
          o.device.c_str(), name.c_str(), o.calls, imperative.seconds, hybridized.seconds, imperative.issue_seconds,
          hybridized.issue_seconds, info.num_nodes, info.pushes_per_run, diff);
    } else {
      std::printf("device %s (%s), %d calls of the MLP on a 1x512 input, best of %d\n", o.device.c_str(), name.c_str(),
                  o.calls, o.repeat);
      std::printf("  imperative:   %.4f s  (issuing the calls: %.4f s; %d ops per call)\n", imperative.seconds,
                  imperative.issue_seconds, info.num_nodes);
      std::printf("  hybridized:   %.4f s  (issuing the calls: %.4f s; %d engine op per call)\n", hybridized.seconds,
                  hybridized.issue_seconds, info.pushes_per_run);
      std::printf("  speed-up:     %.2fx\n", imperative.seconds / hybridized.seconds);
    }
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-mlp-hybrid: %s\n", e.what());
    return 1;
  }
  return 0;
}
