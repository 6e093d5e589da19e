// braid_device_measure (ABI 1.4): a device's matmul FLOP/s and copy bandwidths, measured once.
#include "support.h"

TEST_CASE("braid_device_measure: positive figures, measured once, errors for bad arguments") {
  test::Ctx c(1);
  braid_device_perf p{};
  p.struct_size = sizeof p;
  BRAID_CHECK_OK(braid_device_measure(c.ctx, 0, &p));
  CHECK(p.struct_size == sizeof p);
  CHECK(p.matmul_flops_f32 > 1e8);  // any CPU does 0.1 GFLOP/s
  CHECK(p.matmul_flops_f64 > 1e8);
  CHECK(p.copy_bytes_per_s > 1e8);
  CHECK(p.host_to_device_bytes_per_s > 1e8);
  CHECK(p.device_to_host_bytes_per_s > 1e8);
  CHECK(p.seconds > 0);
  braid_device_perf again{};
  again.struct_size = sizeof again;
  BRAID_CHECK_OK(braid_device_measure(c.ctx, 0, &again));
  CHECK(again.matmul_flops_f32 == p.matmul_flops_f32);  // cached, not measured again
  CHECK(again.seconds == p.seconds);
  // An older caller's shorter struct gets its prefix.
  braid_device_perf older{};
  older.struct_size = offsetof(braid_device_perf, matmul_flops_f64);
  BRAID_CHECK_OK(braid_device_measure(c.ctx, 0, &older));
  CHECK(older.struct_size == offsetof(braid_device_perf, matmul_flops_f64));
  CHECK(older.matmul_flops_f32 == p.matmul_flops_f32);
  CHECK(older.matmul_flops_f64 == 0);
  CHECK(braid_device_measure(c.ctx, 7, &p) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_device_measure(c.ctx, 0, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_device_measure(nullptr, 0, &p) == BRAID_ERR_INVALID_ARGUMENT);
  p.struct_size = 0;
  CHECK(braid_device_measure(c.ctx, 0, &p) == BRAID_ERR_INVALID_ARGUMENT);
}
