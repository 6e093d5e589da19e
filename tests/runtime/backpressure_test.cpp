// Backpressure (docs/ENGINE.md#backpressure): with a bound on in-flight bytes, a frontend that pushes
// far ahead of the device cannot make memory grow without limit.
#include <cstdlib>
#include <string>

#include "support.h"

namespace {

// Pushes 200 ops of 4 MB outputs, each released at once (only the engine holds it until its op
// ends), far faster than the device runs them; returns the peak of allocated bytes and checks that
// the work really ran.
uint64_t peak_of_running_ahead(braid_context ctx) {
  const int64_t n = 1000;  // 1000x1000 float32: 4 MB per output
  test::T x = test::full(ctx, 0, BRAID_FLOAT32, {n, n}, 1.0);
  BRAID_CHECK_OK(braid_wait_all(ctx));
  BRAID_CHECK_OK(braid_memory_reset_peak(ctx, 0));
  for (int i = 0; i < 200; ++i) {
    test::T y;
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 1.0, 0, y.out()));
  }
  BRAID_CHECK_OK(braid_wait_all(ctx));
  braid_memory_stats s{};
  s.struct_size = sizeof s;
  BRAID_CHECK_OK(braid_memory_stats_get(ctx, 0, &s));
  INFO("peak allocated " << s.peak_allocated_bytes << " bytes");
  CHECK(s.peak_allocated_bytes >= 2 * 4000000);  // x and at least one output
  return s.peak_allocated_bytes;
}

constexpr uint64_t kInput = 4000000;
constexpr uint64_t kOneOutput = 4000256;  // 4 MB rounded up to the allocator's 512-byte granule

}  // namespace

TEST_CASE("backpressure: in-flight memory stays under the bound") {
  constexpr uint64_t kBound = 64ull << 20;  // 64 MiB of op outputs in flight
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.max_inflight_bytes = kBound;
  opts.engine_mode = BRAID_ENGINE_ASYNC;  // the point is a frontend running ahead
  test::Ctx c(1, opts);
  // The bound is checked before each push, so at most one output beyond it is in flight.
  CHECK(peak_of_running_ahead(c.ctx) <= kInput + kBound + kOneOutput);
}

TEST_CASE("backpressure: a CPU device's default bound is 128 MiB of outputs") {
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.engine_mode = BRAID_ENGINE_ASYNC;
  // The default is what this case checks: hide an override in the environment while the context opens.
  const char* set = std::getenv("BRAID_MAX_INFLIGHT_BYTES");
  const std::string saved = set ? set : "";
  unsetenv("BRAID_MAX_INFLIGHT_BYTES");
  test::Ctx c(1, opts);
  if (set != nullptr) setenv("BRAID_MAX_INFLIGHT_BYTES", saved.c_str(), 1);
  braid_device_info info{};
  info.struct_size = sizeof info;
  BRAID_CHECK_OK(braid_context_device_info(c.ctx, 0, &info));
  REQUIRE(info.kind == BRAID_DEVICE_CPU);
  // 200 outputs would be 800 MB in flight under the 1 GiB a discrete GPU gets.
  CHECK(peak_of_running_ahead(c.ctx) <= kInput + (128ull << 20) + kOneOutput);
}

TEST_CASE("backpressure: the op-count bound holds too, and results are right") {
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.max_inflight_ops = 4;
  test::Ctx c(1, opts);
  test::T acc = test::full(c.ctx, 0, BRAID_FLOAT64, {16}, 0.0);
  test::T one = test::full(c.ctx, 0, BRAID_FLOAT64, {16}, 1.0);
  for (int i = 0; i < 500; ++i) BRAID_CHECK_OK(braid_sgd_update(acc.t, one.t, -1.0, 0.0));  // acc += 1
  CHECK(test::to_vector(acc).front() == 500.0);
}
