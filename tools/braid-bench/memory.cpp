// Suite `memory`: the chapter's asynchrony-and-memory experiment. A frontend that never waits runs
// ahead of the device, and every op it pushes holds its output memory until the op has run; with no
// bound, the whole run's intermediates can be alive at once. braid bounds that (backpressure: a push
// waits while a device has max_inflight_ops ops or max_inflight_bytes of outputs in flight), so
// memory stays flat. The suite pushes the same training-shaped work twice, in two fresh contexts:
// once with the default bound and once with the bound disabled (UINT64_MAX), never synchronising
// inside the loop, and reports the peak device memory (braid_memory_stats peak_allocated_bytes) and
// the peak growth of the process's resident set (VmHWM after resetting it) of each. A third run,
// bounded again but with the data iterator's prefetch thread off, times what overlapping the batch
// preparation with compute is worth.
//
// The work per step: a Fashion-MNIST batch from the data iterator (256 images, prefetched), an MLP
// forward pass 784-256-10 (matmul, bias add, relu, matmul, bias add, softmax cross-entropy, mean),
// and an SGD update of each parameter. The gradients are made up (the suite predates autograd and
// keeps its pattern): fixed tensors of the parameters' shapes. That changes the arithmetic, not the
// memory pattern the experiment is about (each step's outputs, pushed without a wait).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench.h"
#include "timer.h"

namespace braid::bench {
namespace {

constexpr int64_t kBatch = 256;
constexpr int64_t kIn = 784, kHidden = 256, kClasses = 10;
constexpr int kSteps = 705;  // three epochs of 235 batches
constexpr int kWarmupSteps = 20;

// A kB field of /proc/self/status ("VmRSS", "VmHWM"), in bytes; 0 if unavailable.
uint64_t proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::stoull(line.substr(n + 1)) * 1024;
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false if the kernel refuses.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

struct Owned {
  braid_tensor t = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (t) braid_tensor_release(t);
  }
  braid_tensor* out() {
    if (t) braid_tensor_release(t);
    t = nullptr;
    return &t;
  }
};

struct Result {
  uint64_t peak_allocated = 0;
  uint64_t peak_rss_growth = 0;
  double ms_per_step = 0;
  bool rss_reset = false;
};

class Model {
 public:
  Model(braid_context ctx, braid_device dev) : ctx_(ctx), dev_(dev) {
    normal(w1_, {kIn, kHidden}, 0.05);
    normal(b1_, {kHidden}, 0.0);
    normal(w2_, {kHidden, kClasses}, 0.05);
    normal(b2_, {kClasses}, 0.0);
    normal(g_w1_, {kIn, kHidden}, 1e-3);
    normal(g_b1_, {kHidden}, 1e-3);
    normal(g_w2_, {kHidden, kClasses}, 1e-3);
    normal(g_b2_, {kClasses}, 1e-3);
  }

  // One step, pushed without any wait; every handle is released at once (the storage lives on
  // until the ops that read it have run).
  void step(braid_tensor images, braid_tensor labels) {
    const int64_t flat_shape[] = {-1, kIn};
    Owned x, h, hb, a, z, zb, loss, mean;
    check(braid_reshape(images, 2, flat_shape, x.out()), "braid_reshape");
    check(braid_matmul(x.t, w1_.t, 0, 0, h.out()), "braid_matmul");
    check(braid_binary(BRAID_BINARY_ADD, h.t, b1_.t, hb.out()), "braid_binary");
    check(braid_unary(BRAID_UNARY_RELU, hb.t, a.out()), "braid_unary");
    check(braid_matmul(a.t, w2_.t, 0, 0, z.out()), "braid_matmul");
    check(braid_binary(BRAID_BINARY_ADD, z.t, b2_.t, zb.out()), "braid_binary");
    check(braid_softmax_cross_entropy(zb.t, labels, loss.out()), "braid_softmax_cross_entropy");
    check(braid_reduce(BRAID_REDUCE_MEAN, loss.t, 0, nullptr, 0, mean.out()), "braid_reduce");
    for (auto [w, g] : {std::pair{&w1_, &g_w1_}, {&b1_, &g_b1_}, {&w2_, &g_w2_}, {&b2_, &g_b2_}})
      check(braid_sgd_update(w->t, g->t, 0.01, 0.0), "braid_sgd_update");
  }

 private:
  void normal(Owned& t, std::vector<int64_t> shape, double stddev) {
    check(braid_random_normal(ctx_, dev_, BRAID_FLOAT32, static_cast<int32_t>(shape.size()), shape.data(), 0.0, stddev,
                              t.out()),
          "braid_random_normal");
  }
  braid_context ctx_;
  braid_device dev_;
  Owned w1_, b1_, w2_, b2_, g_w1_, g_b1_, g_w2_, g_b2_;
};

// Pulls the next batch, starting a new epoch at the end of one.
void next_batch(braid_batch_iterator it, Owned& images, Owned& labels) {
  for (int tries = 0; tries < 2; ++tries) {
    check(braid_batch_iterator_next(it, images.out(), labels.out()), "braid_batch_iterator_next");
    if (images.t) return;
  }
  throw Error("the batch iterator returned an empty epoch");
}

Result run_mode(const Run& run, uint64_t bound, int32_t prefetch) {
  braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
  co.max_inflight_ops = bound;
  co.max_inflight_bytes = bound;
  braid_context ctx = nullptr;
  check(braid_context_create(&co, &ctx), "braid_context_create");
  struct CtxRelease {
    braid_context c;
    ~CtxRelease() { braid_context_release(c); }
  } ctx_guard{ctx};
  braid_device dev = 0;
  check(braid_context_find_device(ctx, run.info.id, &dev), "braid_context_find_device");

  braid_dataset ds = nullptr;
  check(braid_dataset_open(ctx, nullptr, &ds), "braid_dataset_open");
  braid_batch_iterator it = nullptr;
  braid_batch_iterator_options io = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  io.batch_size = kBatch;
  io.seed = 1;
  io.device = dev;
  io.prefetch = prefetch;
  const braid_status st = braid_batch_iterator_create(ds, &io, &it);
  braid_dataset_release(ds);  // the iterator holds it
  check(st, "braid_batch_iterator_create");
  struct ItRelease {
    braid_batch_iterator i;
    ~ItRelease() { braid_batch_iterator_release(i); }
  } it_guard{it};

  Model model(ctx, dev);
  Owned images, labels;
  for (int s = 0; s < kWarmupSteps; ++s) {
    next_batch(it, images, labels);
    model.step(images.t, labels.t);
  }
  check(braid_wait_all(ctx), "braid_wait_all");

  Result r;
  check(braid_memory_reset_peak(ctx, dev), "braid_memory_reset_peak");
  r.rss_reset = reset_peak_rss();
  const uint64_t rss0 = proc_status_bytes("VmRSS");
  braid_memory_stats before{};
  before.struct_size = sizeof before;
  check(braid_memory_stats_get(ctx, dev, &before), "braid_memory_stats_get");

  tools::Stopwatch sw;
  for (int s = 0; s < kSteps; ++s) {  // no wait of any kind inside the loop
    next_batch(it, images, labels);
    model.step(images.t, labels.t);
  }
  images.out();  // drop the last batch's handles before the final wait
  labels.out();
  check(braid_wait_all(ctx), "braid_wait_all");
  r.ms_per_step = sw.seconds() * 1e3 / kSteps;

  braid_memory_stats after{};
  after.struct_size = sizeof after;
  check(braid_memory_stats_get(ctx, dev, &after), "braid_memory_stats_get");
  r.peak_allocated = after.peak_allocated_bytes;
  const uint64_t hwm = proc_status_bytes("VmHWM");
  r.peak_rss_growth = hwm > rss0 ? hwm - rss0 : 0;
  return r;
}

}  // namespace

void suite_memory(Run& run) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const Result bounded = run_mode(run, 0, 2);             // 0: the default bound
  const Result unbounded = run_mode(run, UINT64_MAX, 2);  // backpressure off
  // The same bounded run with the batches prepared on the calling thread (no prefetch thread): what
  // the overlap of loading and compute is worth here.
  const Result no_prefetch = run_mode(run, 0, 0);
  const std::string base = "default bound (same run)";
  run.out->figure({"memory", "peak_alloc_bounded", bounded.peak_allocated / kMiB, "MiB", std::nullopt, 0});
  run.out->figure(
      {"memory", "peak_alloc_unbounded", unbounded.peak_allocated / kMiB, "MiB", base, bounded.peak_allocated / kMiB});
  run.out->figure({"memory", "peak_rss_growth_bounded", bounded.peak_rss_growth / kMiB, "MiB", std::nullopt, 0});
  run.out->figure({"memory", "peak_rss_growth_unbounded", unbounded.peak_rss_growth / kMiB, "MiB", base,
                   bounded.peak_rss_growth / kMiB});
  run.out->figure({"memory", "step_ms_bounded", bounded.ms_per_step, "ms", std::nullopt, 0});
  run.out->figure({"memory", "step_ms_unbounded", unbounded.ms_per_step, "ms", base, bounded.ms_per_step});
  run.out->figure(
      {"memory", "step_ms_no_prefetch", no_prefetch.ms_per_step, "ms", "prefetch 2 (same run)", bounded.ms_per_step});
  if (!bounded.rss_reset || !unbounded.rss_reset || !no_prefetch.rss_reset)
    run.out->note("memory", "could not reset VmHWM (/proc/self/clear_refs): RSS growth includes earlier peaks");
  run.out->note("memory", std::to_string(kSteps) + " steps of batch " + std::to_string(kBatch) +
                              " (MLP 784-256-10 forward + SGD with fixed made-up gradients), no wait "
                              "inside the loop; one run per mode (--repeat does not apply); default bound = "
                              "BRAID_MAX_INFLIGHT_OPS/_BYTES if set, else the device's (1024 ops; 128 MiB on a CPU)");
}

}  // namespace braid::bench
