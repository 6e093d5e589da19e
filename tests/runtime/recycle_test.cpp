// Reusing a released storage (docs/ENGINE.md, "Reusing a released storage"): an op output may take
// over a large storage the application released while ops on the same compute queue still use it,
// ordered after them, so a frontend running ahead cycles one cache-hot block instead of many cold ones.
#include "support.h"

namespace {

constexpr int64_t kRows = 512;  // 512 x 256 float64: 1 MiB per tensor
constexpr uint64_t kBlock = kRows * kRows / 2 * 8;

braid_memory_stats stats(braid_context ctx) {
  braid_memory_stats s{};
  s.struct_size = sizeof s;
  BRAID_CHECK_OK(braid_memory_stats_get(ctx, 0, &s));
  return s;
}

}  // namespace

TEST_CASE("recycling: outputs released while their ops are queued reuse one block, with the right values") {
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.engine_mode = BRAID_ENGINE_ASYNC;  // the point is a frontend running ahead of its device
  test::Ctx c(1, opts);
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {kRows, kRows / 2}, 1.0);
  // A matmul of ~7 GFLOP first: the ops pushed behind it on the compute queue are all still queued
  // when the loop below has pushed them.
  test::T a = test::full(c.ctx, 0, BRAID_FLOAT32, {1500, 1500}, 0.001);
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  const uint64_t before = stats(c.ctx).allocated_bytes;
  BRAID_CHECK_OK(braid_memory_reset_peak(c.ctx, 0));
  test::T slow;
  BRAID_CHECK_OK(braid_matmul(a.t, a.t, 0, 0, slow.out()));
  test::T kept;  // one output the application keeps: never taken over
  for (int i = 1; i <= 40; ++i) {
    test::T y;  // released at the end of the iteration, its op still queued
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, double(i), 0, y.out()));
    if (i == 5) std::swap(kept.t, y.t);
  }
  test::T last;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 100.0, 0, last.out()));
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  const braid_memory_stats s = stats(c.ctx);
  const uint64_t grew = s.peak_allocated_bytes - before;
  INFO("peak growth " << grew << " bytes; the matmul's output is " << 1500 * 1500 * 4);
  // The matmul's output, the kept tensor, and a couple of blocks in turn; 40 fresh blocks without reuse.
  CHECK(grew <= uint64_t{1500 * 1500 * 4} + 5 * (kBlock + 512));
  const std::vector<double> k = test::to_vector(kept), l = test::to_vector(last);
  CHECK(k.front() == 6.0);
  CHECK(k.back() == 6.0);
  CHECK(l.front() == 101.0);
  CHECK(l.back() == 101.0);
}

TEST_CASE("recycling: a released output still being copied to another device keeps its values") {
  // y is read by a copy on cpu:1's transfer queue; the next outputs on cpu:0 must not overwrite it
  // before that copy has read it (such a storage is not taken over; were it, the engine would still
  // order the write after the copy).
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.engine_mode = BRAID_ENGINE_ASYNC;
  test::Ctx c(2, opts);
  REQUIRE(c.devices() >= 2);
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {kRows, kRows / 2}, 2.0);
  std::vector<test::T> copies(20);
  for (int i = 0; i < 20; ++i) {
    test::T y;
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, x.t, double(i), 0, y.out()));
    BRAID_CHECK_OK(braid_copy(y.t, 1, copies[size_t(i)].out()));
    // y is released here; these outputs have its size and run on cpu:0 while the copy may not have run
    for (int j = 0; j < 3; ++j) {
      test::T z;
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, -1000.0, 0, z.out()));
    }
  }
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  for (int i = 0; i < 20; ++i) {
    const std::vector<double> v = test::to_vector(copies[size_t(i)]);
    CHECK(v.front() == 2.0 * i);
    CHECK(v.back() == 2.0 * i);
  }
}
