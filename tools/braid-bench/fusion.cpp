// Suite `fusion`: graph mode's elementwise fusion on one device (--device). A chain of eight
// elementwise kernels over a 1024x1024 float32 tensor (mul by a broadcast row, add, tanh, sub, exp,
// mul, sigmoid, maximum: transcendental and cheap ops, two inputs) runs imperatively, as eight
// kernels, and as a traced graph, where FUSE_ELEMENTWISE makes it one kernel (a shader or kernel
// generated for the program on Vulkan and CUDA). Each timing is one run and a wait; the first graph
// run, which prepares the run (and compiles the program where the backend generates code), is
// reported on its own.
#include <array>
#include <string>

#include "bench.h"
#include "stats.h"
#include "timer.h"

namespace braid::bench {
namespace {

constexpr int kFusionRepeat = 15;
constexpr int64_t kRows = 1024, kCols = 1024;

Tensor random_tensor(const Run& run, int ndim, const int64_t* shape) {
  braid_tensor t = nullptr;
  check(braid_random_uniform(run.ctx, run.device, BRAID_FLOAT32, ndim, shape, -2.0, 2.0, &t), "braid_random_uniform");
  return Tensor(t);
}

// The chain; every intermediate is released as soon as the next op has it.
Tensor chain(braid_tensor x, braid_tensor row) {
  braid_tensor t = nullptr;
  // Reads t in its body, after the call in its argument has set it.
  auto step = [&t](braid_status s, const char* what) {
    check(s, what);
    return Tensor(t);
  };
  Tensor a = step(braid_binary(BRAID_BINARY_MUL, x, row, &t), "mul");
  Tensor b = step(braid_binary_scalar(BRAID_BINARY_ADD, a.get(), 0.5, 0, &t), "add");
  Tensor c = step(braid_unary(BRAID_UNARY_TANH, b.get(), &t), "tanh");
  Tensor d = step(braid_binary(BRAID_BINARY_SUB, c.get(), x, &t), "sub");
  Tensor e = step(braid_unary(BRAID_UNARY_EXP, d.get(), &t), "exp");
  Tensor f = step(braid_binary_scalar(BRAID_BINARY_MUL, e.get(), 2.0, 0, &t), "mul");
  Tensor g = step(braid_unary(BRAID_UNARY_SIGMOID, f.get(), &t), "sigmoid");
  return step(braid_binary(BRAID_BINARY_MAXIMUM, g.get(), x, &t), "maximum");
}

struct GraphRelease {
  void operator()(braid_graph g) const noexcept { braid_graph_release(g); }
};
using Graph = std::unique_ptr<braid_graph_t, GraphRelease>;

}  // namespace

void suite_fusion(Run& run) {
  const int repeat = run.repeat_or(kFusionRepeat);
  const int64_t shape[2] = {kRows, kCols};
  Tensor x = random_tensor(run, 2, shape);
  Tensor row = random_tensor(run, 1, &shape[1]);
  braid_tensor xin = x.get();

  check(braid_graph_trace_begin(run.ctx, 1, &xin), "braid_graph_trace_begin");
  Tensor traced = chain(xin, row.get());
  braid_tensor out = traced.get();
  braid_graph g = nullptr;
  check(braid_graph_trace_end(run.ctx, 1, &out, &g), "braid_graph_trace_end");
  Graph graph(g);
  check(braid_graph_optimize(g, BRAID_GRAPH_PASS_ALL), "braid_graph_optimize");

  auto graph_run = [&] {
    tools::Stopwatch sw;
    braid_tensor y = nullptr;
    check(braid_graph_run(g, 1, &xin, 1, &y), "braid_graph_run");
    Tensor held(y);
    check(braid_tensor_wait_to_read(y), "braid_tensor_wait_to_read");
    return sw.seconds() * 1e3;
  };
  auto imperative = [&] {
    tools::Stopwatch sw;
    Tensor y = chain(xin, row.get());
    check(braid_tensor_wait_to_read(y.get()), "braid_tensor_wait_to_read");
    return sw.seconds() * 1e3;
  };
  check(braid_wait_all(run.ctx), "braid_wait_all");
  const double first = graph_run();
  braid_graph_info info{};  // after a run: fusion applies when a run's calls are prepared
  info.struct_size = sizeof info;
  check(braid_graph_get_info(g, &info), "braid_graph_get_info");
  imperative();  // warm-up: the allocator's cache holds the intermediates' blocks
  const auto [fused, eager] = tools::measure_interleaved<2>(repeat, {graph_run, imperative});

  run.out->figure({"fusion", "first_graph_run", first, "ms", std::nullopt, 0});
  run.out->figure(
      {"fusion", "fused_chain_1024x1024", fused.median, "ms", "braid imperative (8 kernels)", eager.median});
  run.out->note("fusion", "the graph runs " + std::to_string(info.kernels_per_run) + " kernel(s) per run on " +
                              std::string(run.info.id) + "; medians of " + std::to_string(repeat) +
                              " alternating runs");
}

}  // namespace braid::bench
