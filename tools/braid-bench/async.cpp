// Suite `async`: the chapter's experiment. The loop y = x + 1 on a 2000x2000 float32 tensor, 1000
// times, with a wait after every op (synchronous: the frontend idles while the kernel runs, the
// kernel idles while the frontend prepares the next op) versus one wait at the end (asynchronous:
// the frontend runs ahead and the device never starves). PyTorch runs the same loop in the same run;
// on the CPU it executes every op before returning, so it has one figure for both.
#include <string>

#include "bench.h"
#include "stats.h"
#include "timer.h"
#include "torch_anchor.h"

namespace braid::bench {
namespace {

constexpr int64_t kSize = 2000;
constexpr int kOps = 1000;
// Warm-up of each mode. The asynchronous loop keeps up to BRAID_MAX_INFLIGHT_BYTES of outputs in flight
// (by default 8 of these 16 MB tensors on a CPU, 64 on a discrete GPU); the caching allocator obtains those blocks, and
// the OS faults their pages in, on the first such loop, which is not what a steady-state loop costs.
constexpr int kWarmupOps = 200;
constexpr int kDefaultRepeat = 3;

// One loop of `ops` iterations; returns milliseconds.
double loop_ms(Run& run, braid_tensor x, int ops, bool wait_each) {
  check(braid_wait_all(run.ctx), "braid_wait_all");
  tools::Stopwatch sw;
  for (int i = 0; i < ops; ++i) {
    braid_tensor y = nullptr;
    check(braid_binary_scalar(BRAID_BINARY_ADD, x, 1.0, 0, &y), "braid_binary_scalar");
    Tensor owned(y);
    if (wait_each) check(braid_tensor_wait_to_read(y), "braid_tensor_wait_to_read");
  }
  check(braid_wait_all(run.ctx), "braid_wait_all");
  return sw.seconds() * 1e3;
}

}  // namespace

void suite_async(Run& run) {
  const int repeat = run.repeat_or(kDefaultRepeat);
  const Tensor x = full_2d(run, kSize, kSize, 1.0);
  loop_ms(run, x.get(), kWarmupOps, true);
  loop_ms(run, x.get(), kWarmupOps, false);

  TorchAnchor torch("loop --threads " + std::to_string(run.host_cores) + " --size " + std::to_string(kSize) +
                        " --ops " + std::to_string(kOps),
                    "loop_ms");
  const auto [sync, async, tt] = tools::measure_interleaved<3>(
      repeat, {[&] { return loop_ms(run, x.get(), kOps, true); }, [&] { return loop_ms(run, x.get(), kOps, false); },
               [&] { return torch.sample(); }});

  Figure fs{"async", "sync_loop_2000x2000x1000", sync.median, "ms", std::nullopt, 0};
  Figure fa{"async", "async_loop_2000x2000x1000", async.median, "ms", std::nullopt, 0};
  if (!torch.failed()) {
    fs.baseline = fa.baseline = "pytorch " + torch.version() + " (same loop)";
    fs.baseline_value = fa.baseline_value = tt.median;
  }
  run.out->figure(fs);
  run.out->figure(fa);
  run.out->figure({"async", "async_speedup", sync.median / async.median, "x", std::nullopt, 0});
  if (torch.failed()) run.out->note("async", "PyTorch comparison skipped: " + torch.why());
  run.out->note("async", "target: asynchronous loop <= 1.0x PyTorch's time (medians of " + std::to_string(repeat) +
                             " alternating runs)");
}

}  // namespace braid::bench
