// Automatic parallelism, checked from the profiler's timestamps (never wall-clock thresholds):
// independent ops on two devices overlap, and a copy on a transfer queue overlaps compute.
#include <span>
#include <string>
#include <vector>

#include "support.h"
#include "trace.h"

namespace {
// Overlap is a property of the asynchronous engine: these contexts are async whatever BRAID_ENGINE says.
braid_context_options async_options() {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.engine_mode = BRAID_ENGINE_ASYNC;
  return o;
}

// Chains of matmuls, one per device: each matmul depends on the previous one, so a chain is serial on
// its device. The inputs are made (and waited for) before profiling, so the random fill's time does not
// decide when the chains start, and the pushes alternate between the devices, so neither chain gets a
// head start of a whole chain's pushes. Each matmul (1024^3 multiply-adds) takes well over a scheduler
// timeslice even with fast kernels: when other processes hold cores and the queue threads are
// time-sliced, two runnable threads' ops still span each other's slices, so overlap shows concurrency
// without depending on idle cores.
std::vector<test::T> matmul_chains(braid_context ctx, std::span<const braid_device> devices, int n, int length) {
  std::vector<test::T> last(devices.size());
  std::vector<int64_t> shape = {n, n};
  for (size_t d = 0; d < devices.size(); ++d)
    BRAID_CHECK_OK(braid_random_uniform(ctx, devices[d], BRAID_FLOAT32, 2, shape.data(), -0.01, 0.01, last[d].out()));
  BRAID_CHECK_OK(braid_wait_all(ctx));
  BRAID_CHECK_OK(braid_profiler_start(ctx));
  for (int i = 0; i < length; ++i)
    for (auto& a : last) {
      test::T b;
      BRAID_CHECK_OK(braid_matmul(a.t, a.t, 0, 0, b.out()));
      a = std::move(b);
    }
  return last;
}

// The ops' spans, for a failure message: what the trace showed when an overlap was missing.
std::string spans(const std::vector<test::TraceEvent>& events) {
  std::string out;
  for (const auto& e : events)
    out += e.name + " on " + std::to_string(e.pid) + "/" + std::to_string(e.tid) + ": " + std::to_string(e.ts) + " +" +
           std::to_string(e.dur) + " us\n";
  return out;
}
}  // namespace

// What is checked is that the engine lets the two chains run at once (no false dependency, no shared
// lock): that never shows if it does not. On a loaded machine one attempt may still not show it (the
// chains' threads time-sliced one after the other), so up to three attempts, and one overlap suffices.
TEST_CASE("parallelism: independent work on two devices overlaps in the trace") {
  test::Ctx c(2, async_options());
  REQUIRE(c.devices() == 2);  // asked for above: the CPU backend always provides them
  bool overlapped = false;
  std::vector<test::TraceEvent> events;
  const braid_device devices[] = {0, 1};
  for (int attempt = 0; attempt < 3 && !overlapped; ++attempt) {
    auto keep = matmul_chains(c.ctx, devices, 1024, 4);
    BRAID_CHECK_OK(braid_wait_all(c.ctx));
    events = test::stop_profiler_and_read(c.ctx);
    int on0 = 0, on1 = 0;
    for (auto& e : events) {
      on0 += e.name == "matmul" && e.pid == 0;
      on1 += e.name == "matmul" && e.pid == 1;
    }
    CHECK(on0 == 4);
    CHECK(on1 == 4);
    overlapped = test::any_overlap(
        events, [](const test::TraceEvent& e) { return e.name == "matmul" && e.pid == 0; },
        [](const test::TraceEvent& e) { return e.name == "matmul" && e.pid == 1; });
  }
  INFO(spans(events));
  CHECK(overlapped);
}

TEST_CASE("parallelism: a copy on the transfer queue overlaps compute") {
  test::Ctx c(2, async_options());
  REQUIRE(c.devices() == 2);  // asked for above: the CPU backend always provides them
  // Data to copy exists before profiling starts, so the copy does not wait on anything.
  test::T big = test::full(c.ctx, 0, BRAID_FLOAT32, {16384, 4096}, 1.5);  // 256 MiB: a long copy
  // The destinations too: allocating 256 MiB at the copy's push took longer under ASan than the whole
  // matmul chain pushed before it, so the copies could only start once compute had ended.
  std::vector<test::T> keep;
  for (int i = 0; i < 2; ++i) keep.push_back(test::full(c.ctx, 1, BRAID_FLOAT32, {16384, 4096}, 0.0));
  const braid_device compute_on[] = {1};
  auto chain = matmul_chains(c.ctx, compute_on, 1024, 4);  // cpu:1's compute queue; starts the profiler
  for (int i = 0; i < 2; ++i) BRAID_CHECK_OK(braid_copy_into(big.t, keep[size_t(i)].t));  // cpu:1's transfer queue
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  const auto events = test::stop_profiler_and_read(c.ctx);
  INFO(spans(events));
  CHECK(test::any_overlap(
      events, [](const test::TraceEvent& e) { return e.name == "copy" && e.pid == 1 && e.tid == 1; },
      [](const test::TraceEvent& e) { return e.name == "matmul" && e.pid == 1 && e.tid == 0; }));
  std::vector<float> host(static_cast<size_t>(16384) * 4096);
  BRAID_CHECK_OK(braid_tensor_to_host(keep[1].t, host.data(), host.size() * sizeof(float)));
  CHECK(host.front() == 1.5f);
  CHECK(host.back() == 1.5f);
}
