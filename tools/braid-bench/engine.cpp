// Suite `engine`: what one op costs the runtime when the kernel is trivial — a 1x2 tensor, y = x + 1 —
// pushed from C. The kernel takes nanoseconds, so the figure is the engine's own overhead: argument
// checks, shape inference, allocation, dependency tracking, dispatch, completion and the deferred free.
//
// Each timed run pushes kOps ops and then waits for all of them, so the figure is throughput (wall
// time / ops) and includes execution, not just the push. From two threads, each pushes to its own
// tensor: the ops are independent, so any slowdown is contention inside the runtime.
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "stats.h"
#include "timer.h"
#include "torch_anchor.h"

namespace braid::bench {
namespace {

constexpr int64_t kOps = 200000;  // per thread and run: ~0.1 s at the 0.5 us target
constexpr int kEngineRepeat = 5;

struct PushResult {
  braid_status status = BRAID_OK;
  std::string message;  // braid_last_error is per thread: capture it on the pushing thread
};

// The loop under test, as an application would write it: y = x + 1, and drop y.
PushResult push_tiny_ops(braid_tensor x, int64_t ops) {
  for (int64_t i = 0; i < ops; ++i) {
    braid_tensor y = nullptr;
    if (braid_status s = braid_binary_scalar(BRAID_BINARY_ADD, x, 1.0, 0, &y); s != BRAID_OK)
      return {s, std::string("braid_binary_scalar: ") + braid_last_error()};
    braid_tensor_release(y);
  }
  return {};
}

void check_push(const PushResult& r) {
  if (r.status != BRAID_OK) throw Error(std::string(braid_status_name(r.status)) + ": " + r.message);
}

// Microseconds of wall time per op, `threads` threads each pushing kOps ops to its own tensor.
double run_threads(Run& run, const std::vector<Tensor>& xs) {
  const int threads = static_cast<int>(xs.size());
  check(braid_wait_all(run.ctx), "braid_wait_all");  // start from an idle engine
  if (threads == 1) {
    tools::Stopwatch sw;
    check_push(push_tiny_ops(xs[0].get(), kOps));
    check(braid_wait_all(run.ctx), "braid_wait_all");
    return sw.seconds() * 1e6 / static_cast<double>(kOps);
  }
  std::vector<PushResult> results(static_cast<size_t>(threads));
  std::latch ready(threads + 1);
  std::vector<std::jthread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.arrive_and_wait();  // all threads start pushing together
      results[static_cast<size_t>(t)] = push_tiny_ops(xs[static_cast<size_t>(t)].get(), kOps);
    });
  }
  ready.arrive_and_wait();
  tools::Stopwatch sw;
  pool.clear();  // joins
  check(braid_wait_all(run.ctx), "braid_wait_all");
  const double seconds = sw.seconds();
  for (const PushResult& r : results) check_push(r);
  return seconds * 1e6 / static_cast<double>(kOps * threads);
}

}  // namespace

void suite_engine(Run& run) {
  const int repeat = run.repeat_or(kEngineRepeat);
  std::vector<Tensor> one, two;
  one.push_back(full_2d(run, 1, 2, 1.0));
  two.push_back(full_2d(run, 1, 2, 1.0));
  two.push_back(full_2d(run, 1, 2, 1.0));
  run_threads(run, one);  // warm-up: pools, allocator cache, the second pushing thread's state
  run_threads(run, two);

  // PyTorch from Python, same loop, alternating with braid's runs: the anchor of the 0.5 us target.
  TorchAnchor torch("tiny_op --threads " + std::to_string(run.host_cores) + " --ops 100000", "us_per_op");
  const auto [t1, t2, tt] = tools::measure_interleaved<3>(
      repeat,
      {[&] { return run_threads(run, one); }, [&] { return run_threads(run, two); }, [&] { return torch.sample(); }});

  Figure f{"engine", "tiny_op_1thread", t1.median, "us/op", std::nullopt, 0};
  if (!torch.failed()) {
    f.baseline = "pytorch " + torch.version() + " (python loop)";
    f.baseline_value = tt.median;
  }
  run.out->figure(f);
  // Wall time / ops of both threads: below the one-thread figure when pushes scale, above it when
  // the threads contend inside the runtime. Each thread alone sees twice this per op.
  run.out->figure({"engine", "tiny_op_2threads", t2.median, "us/op", std::nullopt, 0});
  if (torch.failed()) run.out->note("engine", "PyTorch comparison skipped: " + torch.why());
  run.out->note("engine", "target: <= 0.5 us/op pushed from C (" + std::to_string(kOps) +
                              " ops per run and thread; medians of " + std::to_string(repeat) + " alternating runs)");
}

}  // namespace braid::bench
