// Suite `async`: the chapter's experiment, the loop y = x + 1 with a wait after every op
// (synchronous: the frontend idles while the kernel runs, the kernel idles while the frontend
// prepares the next op) versus one wait at the end (asynchronous: the frontend runs ahead and the
// device never starves). Two loops: the book's own (x of shape 1x2, 10000 times: what a wait per op
// costs when the op itself is nothing) and the earlier edition's 2000x2000 float32 tensor 1000 times
// (a memory-bound kernel of a few hundred microseconds, where there is little to hide). PyTorch runs
// each loop in the same run; on the CPU it executes every op before returning, so it has one figure
// for both modes.
#include <string>

#include "bench.h"
#include "stats.h"
#include "timer.h"
#include "torch_anchor.h"

namespace braid::bench {
namespace {

constexpr int kAsyncRepeat = 3;

struct Loop {
  int64_t rows, cols;
  int ops;
  // Warm-up of each mode. The asynchronous loop keeps up to BRAID_MAX_INFLIGHT_BYTES of outputs in
  // flight (by default 8 of the 16 MB tensors on a CPU, 64 on a discrete GPU); the caching allocator
  // obtains those blocks, and the OS faults their pages in, on the first such loop, which is not what a
  // steady-state loop costs.
  int warmup_ops;
  const char* suffix;  // of the figures' names: "" for the 2000x2000 loop, whose names predate the other
};

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

void measure(Run& run, const Loop& l, int repeat) {
  const Tensor x = full_2d(run, l.rows, l.cols, 1.0);
  loop_ms(run, x.get(), l.warmup_ops, true);
  loop_ms(run, x.get(), l.warmup_ops, false);
  const std::string shape = std::to_string(l.rows) + "x" + std::to_string(l.cols) + "x" + std::to_string(l.ops);
  TorchAnchor torch("loop --threads " + std::to_string(run.host_cores) + " --rows " + std::to_string(l.rows) +
                        " --cols " + std::to_string(l.cols) + " --ops " + std::to_string(l.ops) + " --warmup " +
                        std::to_string(l.warmup_ops),
                    "loop_ms");
  const auto [sync, async, tt] = tools::measure_interleaved<3>(
      repeat, {[&] { return loop_ms(run, x.get(), l.ops, true); }, [&] { return loop_ms(run, x.get(), l.ops, false); },
               [&] { return torch.sample(); }});
  Figure fs{"async", "sync_loop_" + shape, sync.median, "ms", std::nullopt, 0};
  Figure fa{"async", "async_loop_" + shape, async.median, "ms", std::nullopt, 0};
  if (!torch.failed()) {
    fs.baseline = fa.baseline = "pytorch " + torch.version() + " (same loop)";
    fs.baseline_value = fa.baseline_value = tt.median;
  }
  run.out->figure(fs);
  run.out->figure(fa);
  run.out->figure({"async", std::string("async_speedup") + l.suffix, sync.median / async.median, "x", std::nullopt, 0});
  if (torch.failed()) run.out->note("async", "PyTorch comparison skipped: " + torch.why());
}

}  // namespace

void suite_async(Run& run) {
  const int repeat = run.repeat_or(kAsyncRepeat);
  measure(run, {1, 2, 10000, 2000, "_1x2x10000"}, repeat);
  measure(run, {2000, 2000, 1000, 200, ""}, repeat);
  run.out->note("async",
                "targets: asynchronous loop <= 0.9x the synchronous one and <= 1.0x PyTorch's time "
                "(medians of " +
                    std::to_string(repeat) + " alternating runs)");
}

}  // namespace braid::bench
