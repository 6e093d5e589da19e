// Several compute queues per device (braid_context_options.compute_queues): independent chains of ops
// spread over the queues and overlap in time on one device (profiler timestamps), dependent ops stay
// ordered, results equal the one-queue run, and bad counts are refused.
#include <unistd.h>
#include <cstdio>

#include "support.h"
#include "trace.h"

using test::Ctx;
using test::T;

namespace {

braid_context_options with_queues(int32_t n) {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.compute_queues = n;
  o.engine_mode = BRAID_ENGINE_ASYNC;
  return o;
}

// Two independent chains of `steps` matmuls (x <- x @ w) from two inputs; returns both results.
std::pair<std::vector<double>, std::vector<double>> two_chains(braid_context ctx, int steps) {
  const int64_t n = 512;  // a matmul of ~1 ms: two queues overlap even when the machine gives one core at a time
  std::vector<double> a(n * n), b(n * n), w(n * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<double>((i * 7) % 11) / 11.0;
    b[i] = static_cast<double>((i * 5) % 13) / 13.0;
    w[i] = (static_cast<double>((i * 3) % 17) - 8.0) / (17.0 * n);
  }
  T x = test::from_vector(ctx, 0, a, {n, n}), y = test::from_vector(ctx, 0, b, {n, n});
  T wt = test::from_vector(ctx, 0, w, {n, n});
  for (int s = 0; s < steps; ++s) {
    T nx, ny;
    BRAID_CHECK_OK(braid_matmul(x.t, wt.t, 0, 0, nx.out()));
    BRAID_CHECK_OK(braid_matmul(y.t, wt.t, 0, 0, ny.out()));
    x = std::move(nx);
    y = std::move(ny);
  }
  return {test::to_vector(x), test::to_vector(y)};
}

}  // namespace

TEST_CASE("compute_queues: independent chains overlap on one device, results unchanged") {
  Ctx one(1, with_queues(1));
  const auto want = two_chains(one.ctx, 20);
  Ctx c(1, with_queues(2));
  BRAID_CHECK_OK(braid_profiler_start(c.ctx));
  const auto got = two_chains(c.ctx, 20);
  const auto events = test::stop_profiler_and_read(c.ctx);
  CHECK(got.first == want.first);
  CHECK(got.second == want.second);
  // The matmuls ran on the two compute queues (tracks 0 and 3), both used. Which op goes where depends
  // on timing: an op follows its input's producer only while that producer is unfinished.
  int on0 = 0, on3 = 0, elsewhere = 0;
  for (const auto& e : events)
    if (e.name == "matmul") (e.tid == 0 ? on0 : e.tid == 3 ? on3 : elsewhere) += 1;
  CHECK(on0 + on3 == 40);
  CHECK(elsewhere == 0);
  CHECK(on0 > 0);
  CHECK(on3 > 0);
  CHECK(test::any_overlap(
      events, [](const test::TraceEvent& e) { return e.name == "matmul" && e.tid == 0; },
      [](const test::TraceEvent& e) { return e.name == "matmul" && e.tid == 3; }));
}

TEST_CASE("compute_queues: a count outside 1..16 is refused at context creation") {
  for (int32_t bad : {-1, 17, 1000}) {
    braid_context_options o = with_queues(bad);
    o.backends = "cpu";
    braid_context ctx = nullptr;
    CHECK(braid_context_create(&o, &ctx) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
  }
  setenv("BRAID_COMPUTE_QUEUES", "0x2", 1);
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  braid_context ctx = nullptr;
  CHECK(braid_context_create(&o, &ctx) == BRAID_ERR_INVALID_ARGUMENT);
  unsetenv("BRAID_COMPUTE_QUEUES");
}
