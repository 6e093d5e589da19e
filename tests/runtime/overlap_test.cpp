// Automatic parallelism, checked from the profiler's timestamps (never wall-clock thresholds):
// independent ops on two devices overlap, and a copy on a transfer queue overlaps compute.
#include <unistd.h>

#include "support.h"
#include "trace.h"

namespace {
// Overlap is a property of the asynchronous engine: these contexts are async whatever BRAID_ENGINE says.
braid_context_options async_options() {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.engine_mode = BRAID_ENGINE_ASYNC;
  return o;
}

std::string temp_path(const char* name) { return "/tmp/braid-test-" + std::to_string(getpid()) + "-" + name; }

// A chain of matmuls on one device: each depends on the previous, so the chain is serial there.
// Each matmul is sized to take well over a scheduler timeslice (tens of ms on one core): when other
// processes hold cores and the queue threads are time-sliced, two runnable threads' ops still span
// each other's slices, so overlap shows concurrency without depending on idle cores.
void matmul_chain(braid_context ctx, braid_device dev, int n, int length, std::vector<test::T>& keep) {
  test::T a;
  std::vector<int64_t> shape = {n, n};
  BRAID_CHECK_OK(braid_random_uniform(ctx, dev, BRAID_FLOAT32, 2, shape.data(), -0.01, 0.01, a.out()));
  for (int i = 0; i < length; ++i) {
    test::T b;
    BRAID_CHECK_OK(braid_matmul(a.t, a.t, 0, 0, b.out()));
    a = std::move(b);
  }
  keep.push_back(std::move(a));
}
}  // namespace

// What is checked is that the engine lets the two chains run at once (no false dependency, no shared
// lock): that never shows if it does not. On a loaded machine one attempt may still not show it (the
// chains' threads time-sliced one after the other), so up to three attempts, and one overlap suffices.
TEST_CASE("parallelism: independent work on two devices overlaps in the trace") {
  test::Ctx c(2, async_options());
  REQUIRE(c.devices() == 2);  // asked for above: the CPU backend always provides them
  std::string path = temp_path("overlap.json");
  bool overlapped = false;
  for (int attempt = 0; attempt < 3 && !overlapped; ++attempt) {
    BRAID_CHECK_OK(braid_profiler_start(c.ctx));
    std::vector<test::T> keep;
    matmul_chain(c.ctx, 0, 640, 4, keep);
    matmul_chain(c.ctx, 1, 640, 4, keep);
    BRAID_CHECK_OK(braid_wait_all(c.ctx));
    BRAID_CHECK_OK(braid_profiler_stop(c.ctx, path.c_str()));
    auto events = test::read_trace(path);
    std::remove(path.c_str());
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
  CHECK(overlapped);
}

TEST_CASE("parallelism: a copy on the transfer queue overlaps compute") {
  test::Ctx c(2, async_options());
  REQUIRE(c.devices() == 2);  // asked for above: the CPU backend always provides them
  std::string path = temp_path("copy.json");
  // Data to copy exists before profiling starts, so the copy does not wait on anything.
  test::T big = test::full(c.ctx, 0, BRAID_FLOAT32, {16384, 4096}, 1.5);  // 256 MiB: a long copy
  // The destinations too: allocating 256 MiB at the copy's push took longer under ASan than the whole
  // matmul chain pushed before it, so the copies could only start once compute had ended.
  std::vector<test::T> keep;
  for (int i = 0; i < 2; ++i) keep.push_back(test::full(c.ctx, 1, BRAID_FLOAT32, {16384, 4096}, 0.0));
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  BRAID_CHECK_OK(braid_profiler_start(c.ctx));
  matmul_chain(c.ctx, 1, 640, 4, keep);  // compute on cpu:1's compute queue
  for (int i = 0; i < 2; ++i) BRAID_CHECK_OK(braid_copy_into(big.t, keep[size_t(i)].t));  // cpu:1's transfer queue
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  BRAID_CHECK_OK(braid_profiler_stop(c.ctx, path.c_str()));
  auto events = test::read_trace(path);
  std::remove(path.c_str());
  CHECK(test::any_overlap(
      events, [](const test::TraceEvent& e) { return e.name == "copy" && e.pid == 1 && e.tid == 1; },
      [](const test::TraceEvent& e) { return e.name == "matmul" && e.pid == 1 && e.tid == 0; }));
  std::vector<float> host(static_cast<size_t>(16384) * 4096);
  BRAID_CHECK_OK(braid_tensor_to_host(keep[1].t, host.data(), host.size() * sizeof(float)));
  CHECK(host.front() == 1.5f);
  CHECK(host.back() == 1.5f);
}
