// ABI tests, hostile use: NULL and released handles, bad device indices and names, and the per-thread
// braid_last_error().

#include <thread>

#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("errors") {

TEST_CASE("NULL context: every context function fails with BRAID_ERR_INVALID_ARGUMENT naming itself") {
  const int64_t shape[1] = {4};
  const float data[4] = {1, 2, 3, 4};
  int32_t n = 0;
  braid_device d = 0;
  braid_tensor t = nullptr;
  braid_backend_info bi{};
  bi.struct_size = sizeof bi;
  braid_device_info di{};
  di.struct_size = sizeof di;
  braid_memory_stats ms{};
  ms.struct_size = sizeof ms;
  const auto A = BRAID_ERR_INVALID_ARGUMENT;
  CHECK_FAILS(braid_context_retain(nullptr), A, "braid_context_retain", "NULL");
  CHECK_FAILS(braid_context_release(nullptr), A, "braid_context_release", "NULL");
  CHECK_FAILS(braid_context_backend_count(nullptr, &n), A, "braid_context_backend_count", "NULL");
  CHECK_FAILS(braid_context_backend_info(nullptr, 0, &bi), A, "braid_context_backend_info", "NULL");
  CHECK_FAILS(braid_context_device_count(nullptr, &n), A, "braid_context_device_count", "NULL");
  CHECK_FAILS(braid_context_find_device(nullptr, "cpu:0", &d), A, "braid_context_find_device", "NULL");
  CHECK_FAILS(braid_context_device_info(nullptr, 0, &di), A, "braid_context_device_info", "NULL");
  CHECK_FAILS(braid_wait_all(nullptr), A, "braid_wait_all", "NULL");
  CHECK_FAILS(braid_context_set_seed(nullptr, 1), A, "braid_context_set_seed", "NULL");
  CHECK_FAILS(braid_memory_stats_get(nullptr, 0, &ms), A, "braid_memory_stats_get", "NULL");
  CHECK_FAILS(braid_memory_empty_cache(nullptr, 0), A, "braid_memory_empty_cache", "NULL");
  CHECK_FAILS(braid_memory_reset_peak(nullptr, 0), A, "braid_memory_reset_peak", "NULL");
  CHECK_FAILS(braid_profiler_start(nullptr), A, "braid_profiler_start", "NULL");
  CHECK_FAILS(braid_profiler_stop(nullptr, "/tmp/braid-abi-test-unused.json"), A, "braid_profiler_stop", "NULL");
  CHECK_FAILS(braid_tensor_empty(nullptr, 0, BRAID_FLOAT32, 1, shape, &t), A, "braid_tensor_empty", "NULL");
  CHECK(t == nullptr);
  CHECK_FAILS(braid_tensor_from_host(nullptr, 0, BRAID_FLOAT32, 1, shape, data, sizeof data, &t), A,
              "braid_tensor_from_host", "NULL");
  CHECK_FAILS(braid_full(nullptr, 0, BRAID_FLOAT32, 1, shape, 1.0, &t), A, "braid_full", "NULL");
  CHECK_FAILS(braid_arange(nullptr, 0, BRAID_FLOAT32, 0, 4, 1, &t), A, "braid_arange", "NULL");
  CHECK_FAILS(braid_random_uniform(nullptr, 0, BRAID_FLOAT32, 1, shape, 0, 1, &t), A, "braid_random_uniform", "NULL");
  CHECK_FAILS(braid_random_normal(nullptr, 0, BRAID_FLOAT32, 1, shape, 0, 1, &t), A, "braid_random_normal", "NULL");
  CHECK(t == nullptr);
  // And a NULL out-parameter of create.
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  CHECK_FAILS(braid_context_create(&o, nullptr), A, "braid_context_create", "NULL");
}

TEST_CASE("NULL tensor: every tensor function fails with BRAID_ERR_INVALID_ARGUMENT naming itself") {
  int32_t n = 0;
  int64_t shape[BRAID_MAX_DIMS] = {};
  braid_dtype dt = BRAID_FLOAT32;
  braid_device d = 0;
  int64_t numel = 0;
  float buf[4] = {};
  braid_tensor out = nullptr;
  const auto A = BRAID_ERR_INVALID_ARGUMENT;
  CHECK_FAILS(braid_tensor_retain(nullptr), A, "braid_tensor_retain", "NULL");
  CHECK_FAILS(braid_tensor_release(nullptr), A, "braid_tensor_release", "NULL");
  CHECK_FAILS(braid_tensor_ndim(nullptr, &n), A, "braid_tensor_ndim", "NULL");
  CHECK_FAILS(braid_tensor_shape(nullptr, shape), A, "braid_tensor_shape", "NULL");
  CHECK_FAILS(braid_tensor_dtype(nullptr, &dt), A, "braid_tensor_dtype", "NULL");
  CHECK_FAILS(braid_tensor_device(nullptr, &d), A, "braid_tensor_device", "NULL");
  CHECK_FAILS(braid_tensor_numel(nullptr, &numel), A, "braid_tensor_numel", "NULL");
  CHECK_FAILS(braid_tensor_wait_to_read(nullptr), A, "braid_tensor_wait_to_read", "NULL");
  CHECK_FAILS(braid_tensor_to_host(nullptr, buf, sizeof buf), A, "braid_tensor_to_host", "NULL");
  CHECK_FAILS(braid_tensor_write_host(nullptr, buf, sizeof buf), A, "braid_tensor_write_host", "NULL");
  CHECK_FAILS(braid_unary(BRAID_UNARY_NEG, nullptr, &out), A, "braid_unary", "NULL");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, nullptr, nullptr, &out), A, "braid_binary", "NULL");
  CHECK_FAILS(braid_copy(nullptr, 0, &out), A, "braid_copy", "NULL");
  CHECK_FAILS(braid_cast(nullptr, BRAID_FLOAT64, &out), A, "braid_cast", "NULL");
  CHECK(out == nullptr);
}

TEST_CASE("a released tensor handle is reported, not a crash") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  const int64_t shape[2] = {2, 2};
  braid_tensor t = nullptr;
  REQUIRE_OK(braid_tensor_empty(c.ctx, 0, BRAID_FLOAT32, 2, shape, &t));
  int32_t ndim = 0;
  REQUIRE_OK(braid_tensor_ndim(t, &ndim));
  CHECK(ndim == 2);
  REQUIRE_OK(braid_tensor_release(t));
  ndim = -1;
  CHECK_FAILS(braid_tensor_ndim(t, &ndim), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_ndim", "released");
  CHECK(ndim == -1);
  CHECK_FAILS(braid_tensor_release(t), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_release", "released");
  CHECK_FAILS(braid_tensor_retain(t), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_retain", "released");
  float buf[4];
  CHECK_FAILS(braid_tensor_to_host(t, buf, sizeof buf), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host", "released");
  // A retained handle survives one release.
  REQUIRE_OK(braid_tensor_empty(c.ctx, 0, BRAID_FLOAT32, 2, shape, &t));
  REQUIRE_OK(braid_tensor_retain(t));
  REQUIRE_OK(braid_tensor_release(t));
  CHECK_OK(braid_tensor_ndim(t, &ndim));
  REQUIRE_OK(braid_tensor_release(t));
  CHECK(braid_tensor_ndim(t, &ndim) == BRAID_ERR_INVALID_ARGUMENT);
}

TEST_CASE("bad device indices, unknown device names, backend index out of range") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  REQUIRE(c.devices() == 1);
  const int64_t shape[1] = {4};
  const float data[4] = {1, 2, 3, 4};
  braid_tensor t = nullptr;
  const auto A = BRAID_ERR_INVALID_ARGUMENT;
  for (braid_device bad : {-1, 1, 1000, INT32_MIN}) {
    CAPTURE(bad);
    CHECK_FAILS(braid_tensor_empty(c.ctx, bad, BRAID_FLOAT32, 1, shape, &t), A, "braid_tensor_empty", "out of range");
    CHECK_FAILS(braid_tensor_from_host(c.ctx, bad, BRAID_FLOAT32, 1, shape, data, sizeof data, &t), A,
                "braid_tensor_from_host", "out of range");
    CHECK_FAILS(braid_full(c.ctx, bad, BRAID_FLOAT32, 1, shape, 0.0, &t), A, "braid_full", "out of range");
    braid_device_info di{};
    di.struct_size = sizeof di;
    CHECK_FAILS(braid_context_device_info(c.ctx, bad, &di), A, "braid_context_device_info", "out of range");
    braid_memory_stats ms{};
    ms.struct_size = sizeof ms;
    CHECK_FAILS(braid_memory_stats_get(c.ctx, bad, &ms), A, "braid_memory_stats_get", "out of range");
    CHECK_FAILS(braid_memory_empty_cache(c.ctx, bad), A, "braid_memory_empty_cache", "out of range");
  }
  CHECK(t == nullptr);

  braid_device d = 42;
  CHECK_FAILS(braid_context_find_device(c.ctx, "nope:0", &d), BRAID_ERR_NOT_FOUND, "braid_context_find_device",
              "nope:0");
  CHECK(d == 42);
  CHECK_FAILS(braid_context_find_device(c.ctx, "newer_minor:1", &d), BRAID_ERR_NOT_FOUND, "braid_context_find_device",
              "newer_minor:1");
  CHECK_FAILS(braid_context_find_device(c.ctx, "", &d), BRAID_ERR_NOT_FOUND, "braid_context_find_device", "''");
  CHECK_FAILS(braid_context_find_device(c.ctx, nullptr, &d), A, "braid_context_find_device", "NULL");

  int32_t count = 0;
  REQUIRE_OK(braid_context_backend_count(c.ctx, &count));
  REQUIRE(count == 1);
  braid_backend_info bi{};
  bi.struct_size = sizeof bi;
  CHECK_FAILS(braid_context_backend_info(c.ctx, -1, &bi), A, "braid_context_backend_info", "out of range");
  CHECK_FAILS(braid_context_backend_info(c.ctx, count, &bi), A, "braid_context_backend_info", "out of range");
  CHECK_FAILS(braid_context_backend_info(c.ctx, 0, nullptr), A, "braid_context_backend_info", "NULL");
  CHECK_FAILS(braid_context_backend_count(c.ctx, nullptr), A, "braid_context_backend_count", "NULL");
  CHECK_FAILS(braid_context_device_count(c.ctx, nullptr), A, "braid_context_device_count", "NULL");
}

TEST_CASE("braid_last_error is per thread") {
  int32_t n = 0;
  CHECK(braid_context_device_count(nullptr, &n) == BRAID_ERR_INVALID_ARGUMENT);
  const std::string mine = braid_last_error();
  CHECK_CONTAINS(mine, "braid_context_device_count");
  std::string theirs_before, theirs_after;
  std::thread other([&] {
    theirs_before = braid_last_error();
    (void)braid_tensor_ndim(nullptr, &n);
    theirs_after = braid_last_error();
  });
  other.join();
  CHECK(theirs_before.empty());
  CHECK_CONTAINS(theirs_after, "braid_tensor_ndim");
  CHECK(std::string(braid_last_error()) == mine);
}

}  // TEST_SUITE("errors")
