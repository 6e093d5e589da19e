// Error paths of the library-level, context, memory, profiler, tensor and creation functions of
// braid.h. Op error paths are in errors_ops.cpp; device, memory and asynchronous failures in
// errors_async.cpp.
#include "errors.h"

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

using errors::bad_device;
using errors::ctx;
using errors::Out;

TEST_CASE("errors: version, status and dtype names never fail") {
  const uint32_t v = braid_version();
  CHECK((v >> 16) == BRAID_ABI_MAJOR);
  CHECK((v & 0xffffu) >= BRAID_ABI_MINOR);
  CHECK(std::string(braid_status_name(BRAID_ERR_SHAPE)) == "BRAID_ERR_SHAPE");
  CHECK(std::string(braid_status_name(BRAID_OK)) == "BRAID_OK");
  CHECK(braid_status_name(static_cast<braid_status>(999)) != nullptr);
  CHECK(std::string(braid_dtype_name(BRAID_FLOAT32)) == "float32");
  CHECK(std::string(braid_dtype_name(BRAID_BFLOAT16)) == "bfloat16");
  CHECK(std::string(braid_dtype_name(static_cast<braid_dtype>(99))) == "invalid");
  const size_t sizes[] = {4, 8, 4, 8, 1, 2, 2, 1};
  static_assert(std::size(sizes) == BRAID_DTYPE_COUNT);
  for (int d = 0; d < BRAID_DTYPE_COUNT; ++d) CHECK(braid_dtype_size(static_cast<braid_dtype>(d)) == sizes[d]);
  CHECK(braid_dtype_size(BRAID_DTYPE_COUNT) == 0);
  CHECK(braid_dtype_size(static_cast<braid_dtype>(-1)) == 0);
}

TEST_CASE("errors: braid_last_error is per thread") {
  CHECK_FAILS(braid_wait_all(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_wait_all");
  std::string other = "unset";
  std::thread([&] { other = braid_last_error(); }).join();
  CHECK(other.empty());  // the failure above happened on this thread only
  CHECK(std::string(braid_last_error()).find("wait_all") != std::string::npos);
}

TEST_CASE("errors: context creation and lifetime") {
  braid_context c = nullptr;
  CHECK_FAILS(braid_context_create(nullptr, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create");
  braid_context_options bad_size = BRAID_CONTEXT_OPTIONS_INIT;
  bad_size.struct_size = 0;
  CHECK_FAILS(braid_context_create(&bad_size, &c), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create");
  bad_size.struct_size = offsetof(braid_context_options, backends) + 4;  // half of a pointer
  CHECK_FAILS(braid_context_create(&bad_size, &c), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create");
  CHECK(c == nullptr);
  braid_context_options bad_mode = BRAID_CONTEXT_OPTIONS_INIT;
  bad_mode.engine_mode = static_cast<braid_engine_mode>(77);
  CHECK_FAILS(braid_context_create(&bad_mode, &c), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create");
  CHECK_FAILS(braid_context_retain(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_retain");
  CHECK_FAILS(braid_context_release(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_release");
}

TEST_CASE("errors: context queries") {
  int32_t n = 0;
  braid_backend_info bi{};
  bi.struct_size = sizeof bi;
  braid_device_info di{};
  di.struct_size = sizeof di;
  braid_device d = 0;
  CHECK_FAILS(braid_context_backend_count(nullptr, &n), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_count");
  CHECK_FAILS(braid_context_backend_count(ctx(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_count");
  REQUIRE(braid_context_backend_count(ctx(), &n) == BRAID_OK);
  CHECK_FAILS(braid_context_backend_info(nullptr, 0, &bi), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_info");
  CHECK_FAILS(braid_context_backend_info(ctx(), -1, &bi), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_info");
  CHECK_FAILS(braid_context_backend_info(ctx(), n, &bi), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_info");
  CHECK_FAILS(braid_context_backend_info(ctx(), 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_backend_info");

  CHECK_FAILS(braid_context_device_count(nullptr, &n), BRAID_ERR_INVALID_ARGUMENT, "braid_context_device_count");
  CHECK_FAILS(braid_context_device_count(ctx(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_device_count");

  CHECK_FAILS(braid_context_find_device(nullptr, "cpu:0", &d), BRAID_ERR_INVALID_ARGUMENT, "braid_context_find_device");
  CHECK_FAILS(braid_context_find_device(ctx(), nullptr, &d), BRAID_ERR_INVALID_ARGUMENT, "braid_context_find_device");
  CHECK_FAILS(braid_context_find_device(ctx(), "cpu:0", nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_context_find_device");
  CHECK_FAILS(braid_context_find_device(ctx(), "cpu:99", &d), BRAID_ERR_NOT_FOUND, "braid_context_find_device");
  CHECK_FAILS(braid_context_find_device(ctx(), "no-such-backend:0", &d), BRAID_ERR_NOT_FOUND,
              "braid_context_find_device");
  CHECK_FAILS(braid_context_find_device(ctx(), "", &d), BRAID_ERR_NOT_FOUND, "braid_context_find_device");

  CHECK_FAILS(braid_context_device_info(nullptr, 0, &di), BRAID_ERR_INVALID_ARGUMENT, "braid_context_device_info");
  CHECK_FAILS(braid_context_device_info(ctx(), -1, &di), BRAID_ERR_INVALID_ARGUMENT, "braid_context_device_info");
  CHECK_FAILS(braid_context_device_info(ctx(), bad_device(), &di), BRAID_ERR_INVALID_ARGUMENT,
              "braid_context_device_info");
  CHECK_FAILS(braid_context_device_info(ctx(), 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_context_device_info");

  CHECK_FAILS(braid_wait_all(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_wait_all");
  CHECK_FAILS(braid_context_set_seed(nullptr, 1), BRAID_ERR_INVALID_ARGUMENT, "braid_context_set_seed");
}

TEST_CASE("errors: memory statistics and cache") {
  braid_memory_stats s{};
  s.struct_size = sizeof s;
  CHECK_FAILS(braid_memory_stats_get(nullptr, 0, &s), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_stats_get");
  CHECK_FAILS(braid_memory_stats_get(ctx(), bad_device(), &s), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_stats_get");
  CHECK_FAILS(braid_memory_stats_get(ctx(), -1, &s), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_stats_get");
  CHECK_FAILS(braid_memory_stats_get(ctx(), 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_stats_get");
  CHECK_FAILS(braid_memory_empty_cache(nullptr, 0), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_empty_cache");
  CHECK_FAILS(braid_memory_empty_cache(ctx(), bad_device()), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_empty_cache");
  CHECK_FAILS(braid_memory_reset_peak(nullptr, 0), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_reset_peak");
  CHECK_FAILS(braid_memory_reset_peak(ctx(), bad_device()), BRAID_ERR_INVALID_ARGUMENT, "braid_memory_reset_peak");
}

TEST_CASE("errors: profiler start/stop, bad paths, and a trace that is written") {
  CHECK_FAILS(braid_profiler_start(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_profiler_start");
  CHECK_FAILS(braid_profiler_stop(nullptr, "/tmp/x.json"), BRAID_ERR_INVALID_ARGUMENT, "braid_profiler_stop");
  // A context of its own, so that a profiler left running cannot affect other tests.
  braid::Context c;
  if (c.device_count() == 0) {
    MESSAGE("skipped: no device to profile");
    return;
  }
  CHECK_FAILS(braid_profiler_stop(c.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_profiler_stop");

  REQUIRE(braid_profiler_start(c.get()) == BRAID_OK);
  {
    const auto x = braid::Tensor::ones(c, 0, BRAID_FLOAT32, {64, 64});
    (void)braid::matmul(x, x).to_vector<float>();
  }
  CHECK_FAILS(braid_profiler_stop(c.get(), "/nonexistent-braid-dir/sub/trace.json"), BRAID_ERR_IO,
              "braid_profiler_stop");

  const std::string path = "/tmp/braid-test-ops-trace-" + std::to_string(::getpid()) + ".json";
  REQUIRE(braid_profiler_start(c.get()) == BRAID_OK);
  (void)(braid::Tensor::ones(c, 0, BRAID_FLOAT32, {8}) + 1.0).to_vector<float>();
  REQUIRE(braid_profiler_stop(c.get(), path.c_str()) == BRAID_OK);
  std::ifstream f(path);
  const std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(json.find("traceEvents") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("errors: tensor_empty and tensor_from_host validate every argument") {
  braid_tensor t = nullptr;
  const int64_t shape[] = {2, 3};
  const int64_t negative[] = {2, -3};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const float data[6] = {};
  CHECK_FAILS(braid_tensor_empty(nullptr, 0, BRAID_FLOAT32, 2, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), bad_device(), BRAID_FLOAT32, 2, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), -1, BRAID_FLOAT32, 2, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, static_cast<braid_dtype>(99), 2, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_DTYPE_COUNT, 2, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_FLOAT32, BRAID_MAX_DIMS + 1, nine, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_FLOAT32, -1, shape, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_FLOAT32, 2, nullptr, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_FLOAT32, 2, negative, &t), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");
  CHECK_FAILS(braid_tensor_empty(ctx(), 0, BRAID_FLOAT32, 2, shape, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_empty");

  CHECK_FAILS(braid_tensor_from_host(nullptr, 0, BRAID_FLOAT32, 2, shape, data, sizeof data, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), bad_device(), BRAID_FLOAT32, 2, shape, data, sizeof data, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, static_cast<braid_dtype>(-2), 2, shape, data, sizeof data, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT32, 2, shape, nullptr, sizeof data, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT32, 2, shape, data, sizeof data - 1, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT64, 2, shape, data, sizeof data, &t),  // half the bytes
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT32, 2, negative, data, sizeof data, &t),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
  // 2^62 float32 elements are 2^64 bytes: the count wrapped to 0 and a 0-byte call got past the check.
  const int64_t huge[1] = {int64_t{1} << 62};
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT32, 1, huge, data, 0, &t), BRAID_ERR_INVALID_ARGUMENT,
              "more bytes than 2^64");
  CHECK_FAILS(braid_tensor_from_host(ctx(), 0, BRAID_FLOAT32, 2, shape, data, sizeof data, nullptr),
              BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_from_host");
}

TEST_CASE("errors: tensor handle functions reject NULL handles and outputs") {
  const auto t = errors::tensor(0, BRAID_FLOAT32, {2, 3});
  int32_t n = 0;
  int64_t shape[BRAID_MAX_DIMS] = {};
  int64_t numel = 0;
  braid_dtype dt{};
  braid_device d = 0;
  float buf[6] = {};
  CHECK_FAILS(braid_tensor_retain(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_retain");
  CHECK_FAILS(braid_tensor_release(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_release");
  CHECK_FAILS(braid_tensor_ndim(nullptr, &n), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_ndim");
  CHECK_FAILS(braid_tensor_ndim(t.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_ndim");
  CHECK_FAILS(braid_tensor_shape(nullptr, shape), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_shape");
  CHECK_FAILS(braid_tensor_shape(t.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_shape");
  CHECK_FAILS(braid_tensor_dtype(nullptr, &dt), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_dtype");
  CHECK_FAILS(braid_tensor_dtype(t.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_dtype");
  CHECK_FAILS(braid_tensor_device(nullptr, &d), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_device");
  CHECK_FAILS(braid_tensor_device(t.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_device");
  CHECK_FAILS(braid_tensor_numel(nullptr, &numel), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_numel");
  CHECK_FAILS(braid_tensor_numel(t.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_numel");
  CHECK_FAILS(braid_tensor_wait_to_read(nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_wait_to_read");

  CHECK_FAILS(braid_tensor_to_host(nullptr, buf, sizeof buf), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host");
  CHECK_FAILS(braid_tensor_to_host(t.get(), nullptr, sizeof buf), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host");
  CHECK_FAILS(braid_tensor_to_host(t.get(), buf, sizeof buf - 4), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host");
  CHECK_FAILS(braid_tensor_to_host(t.get(), buf, sizeof buf + 4), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host");
  CHECK_FAILS(braid_tensor_write_host(nullptr, buf, sizeof buf), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_write_host");
  CHECK_FAILS(braid_tensor_write_host(t.get(), nullptr, sizeof buf), BRAID_ERR_INVALID_ARGUMENT,
              "braid_tensor_write_host");
  CHECK_FAILS(braid_tensor_write_host(t.get(), buf, 1), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_write_host");
  // The tensor is intact after all that.
  CHECK(t.to_vector<float>() == std::vector<float>(6, 0.0f));
}

TEST_CASE("errors: creation ops validate their arguments") {
  Out o;
  const int64_t shape[] = {2, 3};
  const int64_t negative[] = {-1};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_FAILS(braid_full(nullptr, 0, BRAID_FLOAT32, 2, shape, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_full");
  CHECK_FAILS(braid_full(ctx(), bad_device(), BRAID_FLOAT32, 2, shape, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_full");
  CHECK_FAILS(braid_full(ctx(), 0, static_cast<braid_dtype>(42), 2, shape, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_full");
  CHECK_FAILS(braid_full(ctx(), 0, BRAID_FLOAT32, BRAID_MAX_DIMS + 1, nine, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_full");
  CHECK_FAILS(braid_full(ctx(), 0, BRAID_FLOAT32, 1, negative, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_full");
  CHECK_FAILS(braid_full(ctx(), 0, BRAID_FLOAT32, 2, shape, 1.0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_full");

  CHECK_FAILS(braid_arange(nullptr, 0, BRAID_FLOAT32, 0, 5, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_arange");
  CHECK_FAILS(braid_arange(ctx(), bad_device(), BRAID_FLOAT32, 0, 5, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_arange");
  CHECK_FAILS(braid_arange(ctx(), 0, static_cast<braid_dtype>(42), 0, 5, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_arange");
  CHECK_FAILS(braid_arange(ctx(), 0, BRAID_FLOAT32, 0, 5, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_arange");
  CHECK_FAILS(braid_arange(ctx(), 0, BRAID_FLOAT32, 0, NAN, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_arange");
  CHECK_FAILS(braid_arange(ctx(), 0, BRAID_FLOAT32, 0, 5, 1, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_arange");

  for (braid_dtype dt : {BRAID_INT32, BRAID_INT64, BRAID_UINT8}) {
    INFO("random ops on ", harness::dtype_name(dt), " (float32/float64 only)");
    CHECK_FAILS(braid_random_uniform(ctx(), 0, dt, 2, shape, 0, 1, o.p()), BRAID_ERR_DTYPE, "braid_random_uniform");
    CHECK_FAILS(braid_random_normal(ctx(), 0, dt, 2, shape, 0, 1, o.p()), BRAID_ERR_DTYPE, "braid_random_normal");
  }
  CHECK_FAILS(braid_random_uniform(nullptr, 0, BRAID_FLOAT32, 2, shape, 0, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_random_uniform");
  CHECK_FAILS(braid_random_uniform(ctx(), bad_device(), BRAID_FLOAT32, 2, shape, 0, 1, o.p()),
              BRAID_ERR_INVALID_ARGUMENT, "braid_random_uniform");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 1, negative, 0, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_random_uniform");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, 0, 1, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_random_uniform");
  // Bounds are checked at the call, as torch.Tensor.uniform_: low > high, non-finite bounds, and a
  // range whose width overflows are refused, each message naming the argument.
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, 1, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "low (1) must not exceed high (0)");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT64, 2, shape, 0.5, -3, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "must not exceed high");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, NAN, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "low must be finite");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, 0, INFINITY, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "high must be finite");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, -INFINITY, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "low must be finite");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT64, 2, shape, -1.5e308, 1.5e308, o.p()),
              BRAID_ERR_INVALID_ARGUMENT, "high - low overflows");
  // In float32, bounds past float32's range (they drew only infinities).
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, -1e300, 1e300, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "low (-1e+300) is out of float32's range");
  CHECK_FAILS(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, -3e38, 3e38, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "high - low overflows float32");
  CHECK_FAILS(braid_random_normal(ctx(), 0, BRAID_FLOAT32, 2, shape, 1e300, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "mean (1e+300) is out of float32's range");
  CHECK_FAILS(braid_random_normal(ctx(), 0, BRAID_FLOAT32, 2, shape, NAN, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "mean must be finite");
  CHECK_FAILS(braid_random_normal(ctx(), 0, BRAID_FLOAT32, 2, shape, 0, -1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "stddev must be non-negative");
  {
    Out same;  // low == high is a constant, not an error (as PyTorch)
    REQUIRE(braid_random_uniform(ctx(), 0, BRAID_FLOAT32, 2, shape, 2, 2, same.p()) == BRAID_OK);
    float v[6] = {};
    REQUIRE(braid_tensor_to_host(same.get(), v, sizeof v) == BRAID_OK);
    for (float f : v) CHECK(f == 2.0f);
  }
  CHECK_FAILS(braid_random_normal(nullptr, 0, BRAID_FLOAT32, 2, shape, 0, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_random_normal");
  CHECK_FAILS(braid_random_normal(ctx(), bad_device(), BRAID_FLOAT32, 2, shape, 0, 1, o.p()),
              BRAID_ERR_INVALID_ARGUMENT, "braid_random_normal");
  CHECK_FAILS(braid_random_normal(ctx(), 0, BRAID_FLOAT32, BRAID_MAX_DIMS + 1, nine, 0, 1, o.p()),
              BRAID_ERR_INVALID_ARGUMENT, "braid_random_normal");
  CHECK_FAILS(braid_random_normal(ctx(), 0, BRAID_FLOAT32, 2, shape, 0, 1, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_random_normal");
}
