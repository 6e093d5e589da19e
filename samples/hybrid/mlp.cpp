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
// samples/hybrid/mlp_compare.py runs this and PyTorch eager and TorchScript in one run and prints the
// chapter's table with the ratios.
#include <braid.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using braid::Tensor;

struct Options {
  std::string device = "cpu:0";
  int calls = 1000;
  int repeat = 5;
  bool json = false;
  std::string export_prefix;
};

[[noreturn]] void usage(FILE* to, int status) {
  std::fprintf(to, "usage: braid-mlp-hybrid [--device NAME] [--calls N] [--repeat N] [--json] [--export PREFIX] [--version]\n");
  std::exit(status);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(stderr, 2);
      return argv[++i];
    };
    auto count = [&]() {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 100000000) usage(stderr, 2);
      return static_cast<int>(n);
    };
    if (a == "--device") o.device = value();
    else if (a == "--calls") o.calls = count();
    else if (a == "--repeat") o.repeat = count();
    else if (a == "--json") o.json = true;
    else if (a == "--export") o.export_prefix = value();
    else if (a == "--help" || a == "-h") usage(stdout, 0);
    else if (a == "--version") {
      std::printf("braid-mlp-hybrid %s\n", braid::version_string().c_str());
      std::exit(0);
    } else {
      std::fprintf(stderr, "braid-mlp-hybrid: unknown option '%s'\n", a.c_str());
      usage(stderr, 2);
    }
  }
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
    for (size_t i = 0; i < want.size(); ++i) diff = std::max({diff, double(std::abs(first[i] - want[i])), double(std::abs(again[i] - want[i]))});
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
      std::printf("{\"device\": \"%s\", \"device_name\": \"%s\", \"calls\": %d, \"imperative_s\": %.6f, \"hybridized_s\": %.6f, "
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
