// The "Computational Performance" chapter's experiments on braid, in C++ (abi/braid.hpp):
//
//  1. Asynchronous computation: the loop y = x + 1 with a wait after every op, then with one wait
//     at the end, on a tiny tensor and on the chapter's 2000x2000 one. The op call only enqueues
//     work, so without the per-op wait the program runs ahead of the kernels.
//  2. Automatic parallelism: two independent chains of matmuls, one on cpu:0 and one on cpu:1. Each
//     is timed alone, then both are pushed together: nothing in the program says "in parallel", the
//     engine sees that the chains share no tensor and runs them at once.
//  3. Communication overlapping computation: matmuls on cpu:0 whose results are copied to cpu:1; the
//     copy of y[i] runs on the transfer queue while y[i+1] is computed.
//
// Everything is recorded by the profiler; the Chrome trace (one track per device queue) shows the
// overlap that the timings report.
//
//   braid-sample-async [--devices A,B] [TRACE_PATH]      (default: cpu:0,cpu:1; trace.json in the build folder)
//
// --devices runs experiments 2 and 3 on another pair, e.g. a heterogeneous one: cpu:0,vulkan:0
// (`--devices=cpu:0,vulkan:0` works too: tools/common/cli.h reads the command line). A bad command line
// exits with status 2.
#include <braid.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.h"

namespace {

using braid::Context;
using braid::Device;
using braid::Tensor;

// Wall-clock seconds taken by fn().
template <class F>
double timed(F&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- 1. asynchronous computation --------------------------------------------------------------------

// y = x + 1, `ops` times, waiting for y after every op (wait_each) or once at the end. Returns seconds.
double loop(const Context& ctx, const Tensor& x, int ops, bool wait_each) {
  ctx.wait_all();
  return timed([&] {
    for (int i = 0; i < ops; ++i) {
      const Tensor y = x + 1.0;         // enqueues the kernel and returns
      if (wait_each) y.wait_to_read();  // the program stops here until the kernel has run
    }
    ctx.wait_all();
  });
}

void async_loop(const Context& ctx, Device dev, int64_t rows, int64_t cols, int ops) {
  const Tensor x = Tensor::ones(ctx, dev, BRAID_FLOAT32, {rows, cols});
  // Warm-up of both modes: the asynchronous loop keeps many outputs in flight, and the caching
  // allocator obtains (and the OS faults in) their blocks once, on the first such loop.
  loop(ctx, x, std::min(ops, 200), true);
  loop(ctx, x, std::min(ops, 200), false);
  const double sync = loop(ctx, x, ops, true);
  const double async = loop(ctx, x, ops, false);
  // Check the answer, not just the clock: a corner of x + 1 holds 2.
  for (const float v : braid::slice(x + 1.0, {0, 0}, {1, 2}).to_vector<float>())
    if (v != 2.0f) throw braid::Error(BRAID_ERR_INTERNAL, "x + 1 computed a wrong value");
  const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + ", " + std::to_string(ops) + " times";
  std::printf("   %-22s wait after every op %7.3f s | one wait at the end %7.3f s | speed-up %.2fx\n", what.c_str(),
              sync, async, sync / async);
}

void async_loops(const Context& ctx, Device dev) {
  std::printf("1. asynchronous computation: y = x + 1 in a loop\n");
  // Tiny tensors: the kernel takes nanoseconds, so a wait per op costs a round trip to the device's
  // thread every time, which the asynchronous loop overlaps with pushing the next ops.
  async_loop(ctx, dev, 1, 2, 10000);
  // The chapter's 2000x2000: each kernel streams 32 MB, so the device, not the program, sets the pace
  // and the two loops take about as long; asynchrony then only keeps the device from idling.
  async_loop(ctx, dev, 2000, 2000, 1000);
  std::printf("\n");
}

// ---- 2. automatic parallelism -----------------------------------------------------------------------

constexpr int64_t kN = 1024;
constexpr int kChain = 10;

struct Operands {
  Tensor x, w;
};

// w has unit-variance columns scaled by 1/sqrt(n), so x @ w @ w ... keeps its magnitude.
Operands operands(const Context& ctx, Device dev) {
  return {Tensor::random_uniform(ctx, dev, BRAID_FLOAT32, {kN, kN}, -1.0, 1.0),
          Tensor::random_normal(ctx, dev, BRAID_FLOAT32, {kN, kN}, 0.0, 1.0 / std::sqrt(double(kN)))};
}

// kChain dependent matmuls; returns the last result (not waited for).
Tensor chain(const Operands& o) {
  Tensor y = o.x;
  for (int i = 0; i < kChain; ++i) y = braid::matmul(y, o.w);
  return y;
}

void parallelism(const Context& ctx, Device d0, Device d1) {
  const Operands a = operands(ctx, d0), b = operands(ctx, d1);
  chain(a).wait_to_read();  // warm-up: thread pools, allocator caches
  chain(b).wait_to_read();
  const double alone0 = timed([&] { chain(a).wait_to_read(); });
  const double alone1 = timed([&] { chain(b).wait_to_read(); });
  const double both = timed([&] {
    const Tensor ya = chain(a);  // pushed, not run: the call returns at once
    const Tensor yb = chain(b);  // independent of ya, so the engine runs it alongside
    ya.wait_to_read();
    yb.wait_to_read();
  });
  const std::string n0 = ctx.device_info(d0).id, n1 = ctx.device_info(d1).id;
  std::printf("2. automatic parallelism: two independent chains of %d matmuls (%lldx%lld)\n", kChain,
              static_cast<long long>(kN), static_cast<long long>(kN));
  std::printf("   chain on %-6s alone : %7.3f s\n", n0.c_str(), alone0);
  std::printf("   chain on %-6s alone : %7.3f s\n", n1.c_str(), alone1);
  std::printf("   both, pushed together: %7.3f s   (one after the other: %.3f s)\n\n", both, alone0 + alone1);
}

// ---- 3. communication overlapping computation -------------------------------------------------------

void copy_overlap(const Context& ctx, Device d0, Device d1) {
  const Operands a = operands(ctx, d0);
  ctx.wait_all();
  std::vector<Tensor> ys;
  const double compute = timed([&] {
    ys.clear();
    for (int i = 0; i < kChain; ++i) ys.push_back(braid::matmul(a.x, a.w));
    ctx.wait_all();
  });
  const double copy = timed([&] {
    for (const Tensor& y : ys) y.copy_to(d1);
    ctx.wait_all();
  });
  const double both = timed([&] {
    std::vector<Tensor> on_d1;
    for (int i = 0; i < kChain; ++i) on_d1.push_back(braid::matmul(a.x, a.w).copy_to(d1));
    ctx.wait_all();
  });
  const std::string n0 = ctx.device_info(d0).id, n1 = ctx.device_info(d1).id;
  std::printf("3. computation and communication: %d matmuls on %s, each result copied to %s\n", kChain, n0.c_str(),
              n1.c_str());
  std::printf("   compute only         : %7.3f s\n", compute);
  std::printf("   copy only            : %7.3f s\n", copy);
  std::printf("   compute + copy       : %7.3f s   (one after the other: %.3f s)\n\n", both, compute + copy);
}

// Next to the build's bin/ folder (build/trace.json), wherever the sample is started from.
std::string default_trace_path(const char* argv0) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) exe = std::filesystem::absolute(argv0, ec);
  return (exe.parent_path().parent_path() / "trace.json").string();
}

struct Options {
  std::string first = "cpu:0", second = "cpu:1";  // --devices A,B
  std::string trace;                              // TRACE_PATH; empty: default_trace_path
};

Options parse(int argc, char** argv) {
  enum { kDevices = CLI_FIRST };
  static const option options[] = {{"devices", required_argument, nullptr, kDevices}, CLI_STANDARD_OPTIONS, {}};
  cli_parser cli = cli_parser_init(
      "braid-sample-async", "usage: braid-sample-async [--devices A,B] [TRACE_PATH] [--help] [--version]\n",
      "Runs the chapter's asynchrony, automatic-parallelism and copy-overlap experiments\n"
      "and writes their Chrome trace to TRACE_PATH (default: trace.json in the build folder).\n",
      options);
  Options o;
  while (cli_next(&cli, argc, argv) != -1) {  // --devices, the only option of its own
    const std::vector<std::string> pair = cli_list(cli, cli.value);
    if (pair.size() != 2) cli_fail(&cli, "--devices takes two device ids, e.g. cpu:0,vulkan:0");
    o.first = pair[0];
    o.second = pair[1];
  }
  // One optional path; an option it does not know never gets here (cli_next refuses it).
  if (argc - optind > 1) cli_fail(&cli, "unexpected argument '%s'", argv[optind + 1]);
  if (optind < argc) o.trace = argv[optind];
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Two CPU devices (each with half the cores) give the parallelism experiment two places to run.
  // setenv before the context is created; an explicit BRAID_CPU_DEVICES wins (overwrite = 0).
  setenv("BRAID_CPU_DEVICES", "2", 0);
  const Options opt = parse(argc, argv);
  const std::string& first = opt.first;
  const std::string& second = opt.second;
  const std::string trace = opt.trace.empty() ? default_trace_path(argv[0]) : opt.trace;
  try {
    const Context ctx;
    const Device d0 = ctx.find_device(first.c_str());
    Device d1 = d0;
    try {
      d1 = ctx.find_device(second.c_str());
    } catch (const braid::Error&) {
      std::printf("note: no device %s (BRAID_CPU_DEVICES=%s); experiments 2 and 3 use %s twice\n\n", second.c_str(),
                  std::getenv("BRAID_CPU_DEVICES"), first.c_str());
    }
    for (const Device d : ctx.devices()) {
      const braid_device_info info = ctx.device_info(d);
      std::printf("device %s: %s, %d core%s\n", info.id, info.name, info.compute_units,
                  info.compute_units == 1 ? "" : "s");
    }
    std::printf("\n");

    ctx.profiler_start();
    async_loops(ctx, d0);
    parallelism(ctx, d0, d1);
    copy_overlap(ctx, d0, d1);
    ctx.profiler_stop(trace);
    std::printf("profiler trace: %s\n  open it in chrome://tracing or https://ui.perfetto.dev (one track per queue)\n",
                trace.c_str());
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-sample-async: %s\n", e.what());
    return 1;
  }
  return 0;
}
