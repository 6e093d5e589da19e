// The CUDA plugin on any machine: it loads (through the context and directly through its query),
// reports zero devices with a reason when there is no GPU or driver, and answers the ABI without a
// device. The GPU cases (device round trip, matmul through cuBLAS, a device-side error becoming a
// tensor error) report skipped, with the reason, where the plugin found no device; where one exists
// they run, and tests/ops runs the whole conformance suite on it.
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "braid.h"
#include "braid_backend.h"
#include <doctest/doctest.h>

#include "bad_work.h"
#include "plugin_loader.h"

namespace {

// The plugin opened directly, as the host's loader would, with a minimal host table.
std::mutex g_log_mu;
std::vector<std::string> g_log;

void host_log(braid_log_level, const char* message) {
  std::lock_guard lock(g_log_mu);
  g_log.emplace_back(message);
}
int32_t host_begin(void*) { return 1; }
void host_end(void*, braid_status, const char*) {}
const braid_host_api kHost = {sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host_log,
                              host_begin, host_end};

struct Plugin : test::PluginLib {
  Plugin() : PluginLib(BRAID_CUDA_PLUGIN, &kHost) {}
};

struct Devices {
  int32_t count = 0;
  std::string reason;
};

Devices probe_devices() {
  Plugin p;
  Devices d;
  const char* reason = nullptr;
  if (p.api() != nullptr && p.api()->device_count(&d.count, &reason) == BRAID_OK && reason != nullptr) d.reason = reason;
  return d;
}

const Devices& devices() {
  static const Devices d = probe_devices();
  return d;
}

bool have_gpu() { return devices().count > 0; }

bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST_CASE("cuda plugin: query answers and the table is ABI 1.1") {
  Plugin p;
  REQUIRE_MESSAGE(p.lib() != nullptr, "cannot open the plugin: ", p.error());
  REQUIRE(p.api() != nullptr);
  CHECK(std::string(p.api()->name) == "cuda");
  CHECK(p.api()->abi_major == BRAID_BACKEND_ABI_MAJOR);
  CHECK(p.api()->abi_minor == BRAID_BACKEND_ABI_MINOR);
  CHECK(p.api()->struct_size == sizeof(braid_backend_api));
  CHECK((p.api()->device_props_json != nullptr));
  // Another major is refused.
  auto query = reinterpret_cast<braid_backend_query_fn>(dlsym(p.lib(), BRAID_BACKEND_QUERY_SYMBOL));
  const braid_backend_api* other = nullptr;
  CHECK(query(BRAID_BACKEND_ABI_MAJOR + 1, 0, &kHost, &other) == BRAID_ERR_ABI_MISMATCH);
  CHECK(other == nullptr);
}

TEST_CASE("cuda plugin: kernel coverage matches the CPU backend's dtypes") {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  auto s = p.api()->supports;
  CHECK(s(BRAID_KOP_MATMUL, BRAID_FLOAT32) == 1);
  CHECK(s(BRAID_KOP_MATMUL, BRAID_FLOAT64) == 1);
  CHECK(s(BRAID_KOP_MATMUL, BRAID_INT32) == 0);
  CHECK(s(BRAID_KOP_FILL, BRAID_FLOAT16) == 1);
  CHECK(s(BRAID_KOP_COPY, BRAID_BFLOAT16) == 1);
  CHECK(s(BRAID_KOP_BINARY, BRAID_INT64) == 1);
  CHECK(s(BRAID_KOP_BINARY, BRAID_UINT8) == 0);
  CHECK(s(BRAID_KOP_RANDOM_NORMAL, BRAID_INT32) == 0);
  CHECK(s(BRAID_KOP_SOFTMAX_CE_BWD, BRAID_FLOAT64) == 1);
  CHECK(s(BRAID_KOP_COUNT, BRAID_FLOAT32) == 0);
  CHECK(s(static_cast<braid_kernel_op>(-1), BRAID_FLOAT32) == 0);
  CHECK(s(BRAID_KOP_FILL, BRAID_DTYPE_COUNT) == 0);
}

TEST_CASE("cuda plugin: device count and reason; no device means no handles") {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  int32_t n = -1;
  const char* reason = nullptr;
  REQUIRE(p.api()->device_count(&n, &reason) == BRAID_OK);
  REQUIRE(reason != nullptr);
  CHECK(n >= 0);
  CHECK(p.api()->device_count(nullptr, &reason) == BRAID_ERR_INVALID_ARGUMENT);
  if (!driver_present()) {
    CHECK(n == 0);
    CHECK(std::string(reason).find("libcuda.so.1") != std::string::npos);
  }
  if (n == 0) {
    CHECK(std::strlen(reason) > 0);
    braid_backend_device dev = nullptr;
    CHECK(p.api()->device_open(0, &dev) == BRAID_ERR_NOT_FOUND);
    CHECK(dev == nullptr);
    braid_backend_device_props props{};
    props.struct_size = sizeof(props);
    CHECK(p.api()->device_props(0, &props) == BRAID_ERR_NOT_FOUND);
    CHECK(p.api()->device_props_json(0) == nullptr);
  } else {
    CHECK(std::strlen(reason) == 0);
    CHECK(p.api()->device_props_json(0) != nullptr);
  }
  CHECK(p.api()->device_open(-1, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(p.api()->queue_submit(nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
}

TEST_CASE("cuda plugin: loads through the context and reports its devices or why there are none") {
  braid_context_options opt = BRAID_CONTEXT_OPTIONS_INIT;
  opt.backends = "cuda";
  braid_context ctx = nullptr;
  REQUIRE(braid_context_create(&opt, &ctx) == BRAID_OK);
  int32_t nb = 0;
  REQUIRE(braid_context_backend_count(ctx, &nb) == BRAID_OK);
  bool found = false;
  for (int32_t i = 0; i < nb; ++i) {
    braid_backend_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(braid_context_backend_info(ctx, i, &info) == BRAID_OK);
    if (std::string(info.name) != "cuda") continue;
    found = true;
    CHECK(info.loaded == 1);
    CHECK(info.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(info.abi_minor == BRAID_BACKEND_ABI_MINOR);
    CHECK(info.device_count == devices().count);
    if (info.device_count == 0) {
      REQUIRE(info.reason != nullptr);
      CHECK(std::string(info.reason) == devices().reason);
      CHECK(std::strlen(info.reason) > 0);
      MESSAGE("cuda backend has no device here: ", std::string(info.reason));
    }
  }
  CHECK(found);
  int32_t nd = -1;
  REQUIRE(braid_context_device_count(ctx, &nd) == BRAID_OK);
  CHECK(nd == devices().count);
  CHECK(braid_context_release(ctx) == BRAID_OK);
}

// ---- GPU cases: skipped, with the reason, where the plugin found no device ----

TEST_CASE("cuda GPU cases are skipped without a device" * doctest::skip(have_gpu())) {
  MESSAGE("skipped: the cuda GPU cases need a CUDA device; the plugin says: ", devices().reason);
}

namespace {
struct Ctx {
  braid_context ctx = nullptr;
  braid_device dev = -1;
  Ctx() {
    braid_context_options opt = BRAID_CONTEXT_OPTIONS_INIT;
    opt.backends = "cuda";
    REQUIRE(braid_context_create(&opt, &ctx) == BRAID_OK);
    REQUIRE(braid_context_find_device(ctx, "cuda:0", &dev) == BRAID_OK);
  }
  ~Ctx() { braid_context_release(ctx); }
};
}  // namespace

TEST_CASE("cuda: host -> device -> host round trip, large enough for chunked staging" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t n = (int64_t(9) << 20) / 4;  // 9 MiB of float32: three 4 MiB staging chunks
  std::vector<float> src(static_cast<size_t>(n)), back(static_cast<size_t>(n), -1.0f);
  for (int64_t i = 0; i < n; ++i) src[size_t(i)] = float(i % 1000) * 0.5f;
  braid_tensor t = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT32, 1, &n, src.data(), src.size() * 4, &t) == BRAID_OK);
  REQUIRE(braid_tensor_to_host(t, back.data(), back.size() * 4) == BRAID_OK);
  CHECK(back == src);
  braid_tensor_release(t);
}

TEST_CASE("cuda: matmul through cuBLAS agrees with a host reference" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t M = 33, K = 17, N = 9;
  std::vector<double> a(size_t(M * K)), b(size_t(K * N)), out(size_t(M * N));
  for (size_t i = 0; i < a.size(); ++i) a[i] = double(int(i % 7) - 3) * 0.25;
  for (size_t i = 0; i < b.size(); ++i) b[i] = double(int(i % 5) - 2) * 0.5;
  const int64_t sa[2] = {M, K}, sb[2] = {K, N};
  braid_tensor ta = nullptr, tb = nullptr, to = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT64, 2, sa, a.data(), a.size() * 8, &ta) == BRAID_OK);
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT64, 2, sb, b.data(), b.size() * 8, &tb) == BRAID_OK);
  REQUIRE(braid_matmul(ta, tb, 0, 0, &to) == BRAID_OK);
  REQUIRE(braid_tensor_to_host(to, out.data(), out.size() * 8) == BRAID_OK);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double r = 0;
      for (int64_t k = 0; k < K; ++k) r += a[size_t(i * K + k)] * b[size_t(k * N + j)];
      CHECK(out[size_t(i * N + j)] == doctest::Approx(r).epsilon(1e-12));
    }
  braid_tensor_release(ta);
  braid_tensor_release(tb);
  braid_tensor_release(to);
}

TEST_CASE("cuda: a label out of range becomes an error on the loss, not an abort" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t sl[2] = {2, 3}, sn[1] = {2};
  const float logits[6] = {0, 1, 2, 3, 4, 5};
  const int64_t labels[2] = {1, 7};
  braid_tensor tl = nullptr, ty = nullptr, loss = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT32, 2, sl, logits, sizeof(logits), &tl) == BRAID_OK);
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_INT64, 1, sn, labels, sizeof(labels), &ty) == BRAID_OK);
  REQUIRE(braid_softmax_cross_entropy(tl, ty, &loss) == BRAID_OK);
  CHECK(braid_tensor_wait_to_read(loss) == BRAID_ERR_KERNEL);
  braid_wait_all(c.ctx);
  braid_tensor_release(tl);
  braid_tensor_release(ty);
  braid_tensor_release(loss);
}

TEST_CASE("cuda: bad work is refused with the reason, and the queue goes on" * doctest::skip(!have_gpu())) {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  const braid_backend_api* api = p.api();
  braid_backend_device dev = nullptr;
  braid_backend_queue queue = nullptr;
  REQUIRE(api->device_open(0, &dev) == BRAID_OK);
  REQUIRE(api->queue_create(dev, BRAID_QUEUE_COMPUTE, &queue) == BRAID_OK);
  test::check_bad_work_is_refused(api, dev, queue, [] {
    std::lock_guard lock(g_log_mu);
    return std::exchange(g_log, {});
  });
  api->queue_destroy(queue);
  api->device_close(dev);
}
