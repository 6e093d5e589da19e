// Backpressure (DESIGN §5): with a bound on in-flight bytes, a frontend that pushes far ahead of
// the device cannot make memory grow without limit.
#include "support.h"

TEST_CASE("backpressure: in-flight memory stays under the bound") {
  constexpr uint64_t kBound = 64ull << 20;  // 64 MiB of op outputs in flight
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.max_inflight_bytes = kBound;
  opts.engine_mode = BRAID_ENGINE_ASYNC;  // the point is a frontend running ahead
  test::Ctx c(1, opts);
  const int64_t n = 1000;  // 1000x1000 float32: 4 MB per output
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT32, {n, n}, 1.0);
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  BRAID_CHECK_OK(braid_memory_reset_peak(c.ctx, 0));
  for (int i = 0; i < 200; ++i) {
    test::T y;
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 1.0, 0, y.out()));
  }  // each output is released at once: only the engine holds it until its op ends
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  braid_memory_stats s{};
  s.struct_size = sizeof s;
  BRAID_CHECK_OK(braid_memory_stats_get(c.ctx, 0, &s));
  const uint64_t x_bytes = 4000000;
  const uint64_t one_output = 4000256;  // 4 MB rounded up to the allocator's 512-byte granule
  INFO("peak allocated " << s.peak_allocated_bytes << " bytes");
  // The bound is checked before each push, so at most one output beyond it is in flight.
  CHECK(s.peak_allocated_bytes <= x_bytes + kBound + one_output);
  CHECK(s.peak_allocated_bytes >= x_bytes + 4000000);  // the work really ran
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
