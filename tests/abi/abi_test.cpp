// ABI tests: version and names, the pinned layout of the public structs (abi_layout.h, checked at
// compile time), struct growth in both directions, symbol presence in libbraid.so, the error paths of
// the context and tensor functions, fork(), and the plugin loading rules with the fake plugins of
// tests/abi/plugins (built into BRAID_TEST_PLUGIN_DIR, never next to libbraid).
//
// Cases that need the real CPU backend are skipped when it is not part of the build
// (BRAID_TEST_HAVE_CPU=0).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "abi_layout.h"  // static_asserts pinning sizes, offsets and enumerator values
#include "braid.h"
#include "braid_backend.h"
#include "fake_backend.h"  // counter indices of the fake plugins

#ifndef BRAID_TEST_HAVE_CPU
#define BRAID_TEST_HAVE_CPU 0
#endif

namespace {

const std::string kPluginDir = BRAID_TEST_PLUGIN_DIR;

// doctest 2.4 streams a `const char*` into a message as a pointer value: wrap C strings with str().
std::string str(const char* s) { return s ? s : "(null)"; }
constexpr bool kHaveCpu = BRAID_TEST_HAVE_CPU != 0;
#if defined(__SANITIZE_THREAD__)
// TSan refuses to start threads in the child of a multi-threaded fork (die_after_fork); the cpu
// backend starts queue threads, so its fork cases are skipped there.
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif

#define CHECK_OK(expr)                                                                         \
  do {                                                                                         \
    braid_status st_ = (expr);                                                                 \
    CHECK_MESSAGE(st_ == BRAID_OK, #expr " -> " << str(braid_status_name(st_)) << ": " << str(braid_last_error())); \
  } while (0)
#define REQUIRE_OK(expr)                                                                         \
  do {                                                                                           \
    braid_status st_ = (expr);                                                                   \
    REQUIRE_MESSAGE(st_ == BRAID_OK, #expr " -> " << str(braid_status_name(st_)) << ": " << str(braid_last_error())); \
  } while (0)
// expr must fail with `status`, and braid_last_error() must begin with "<function>: " and mention `needle`.
#define CHECK_FAILS(expr, status, function, needle)                                                       \
  do {                                                                                                    \
    braid_status st_ = (expr);                                                                            \
    std::string msg_ = braid_last_error();                                                                \
    CHECK_MESSAGE(st_ == (status), #expr " -> " << str(braid_status_name(st_)) << " (want " << str(braid_status_name(status)) \
                                                << "): " << msg_);                                        \
    CHECK_MESSAGE(msg_.rfind(std::string(function) + ": ", 0) == 0, "'" << msg_ << "' should name " << std::string(function)); \
    CHECK_MESSAGE(msg_.find(needle) != std::string::npos, "'" << msg_ << "' should mention '" << std::string(needle) << "'"); \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                                              \
  CHECK_MESSAGE(std::string(hay).find(needle) != std::string::npos,                              \
                "'" << std::string(hay) << "' should contain '" << std::string(needle) << "'")

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string plugin_file(const std::string& name) { return kPluginDir + "/libbraid-backend-" + name + ".so"; }

// Sets (value != NULL) or unsets an environment variable for a scope, restoring it afterwards.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~EnvVar() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// The environment variables that steer plugin discovery, cleared so options decide.
struct CleanPluginEnv {
  EnvVar backends{"BRAID_BACKENDS", nullptr};
  EnvVar path{"BRAID_BACKEND_PATH", nullptr};
};

// A context created with the given options; records the status and message of the creation.
struct Context {
  braid_context ctx = nullptr;
  braid_status status = BRAID_OK;
  std::string error;

  explicit Context(const braid_context_options* options) {
    status = braid_context_create(options, &ctx);
    if (status != BRAID_OK) error = braid_last_error();
  }
  // backends = "a,b" restricted to those names, searched in backend_path (the test plugins by default).
  explicit Context(const char* backends, const char* backend_path = kPluginDir.c_str()) {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = backends;
    o.backend_path = backend_path;
    status = braid_context_create(&o, &ctx);
    if (status != BRAID_OK) error = braid_last_error();
  }
  ~Context() {
    if (ctx) CHECK_OK(braid_context_release(ctx));
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int32_t devices() const {
    int32_t n = -1;
    CHECK_OK(braid_context_device_count(ctx, &n));
    return n;
  }
};

#define REQUIRE_CREATED(c) REQUIRE_MESSAGE((c).status == BRAID_OK, str(braid_status_name((c).status)) << ": " << (c).error)

struct BackendInfo {
  std::string name, path, reason;
  uint32_t abi_major = 0, abi_minor = 0;
  int32_t loaded = -1, device_count = -1;
};

std::vector<BackendInfo> backends_of(braid_context ctx) {
  int32_t n = -1;
  REQUIRE_OK(braid_context_backend_count(ctx, &n));
  REQUIRE(n >= 0);
  std::vector<BackendInfo> out;
  for (int32_t i = 0; i < n; ++i) {
    braid_backend_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_backend_info(ctx, i, &info));
    CHECK(info.struct_size == sizeof info);
    REQUIRE(info.name != nullptr);
    REQUIRE(info.path != nullptr);
    REQUIRE(info.reason != nullptr);
    out.push_back({info.name, info.path, info.reason, info.abi_major, info.abi_minor, info.loaded, info.device_count});
  }
  return out;
}

// The one listed backend called name (fails the test if it is missing or listed twice).
BackendInfo backend_named(braid_context ctx, const std::string& name) {
  auto all = backends_of(ctx);
  auto n = std::count_if(all.begin(), all.end(), [&](const BackendInfo& b) { return b.name == name; });
  std::string listed;
  for (auto& b : all) listed += b.name + " ";
  REQUIRE_MESSAGE(n == 1, "backend '" << name << "' listed " << n << " times; listed: " << listed);
  return *std::find_if(all.begin(), all.end(), [&](const BackendInfo& b) { return b.name == name; });
}

// Keeps a fake plugin mapped (the host's dlopen of the same file then shares it) and reads its
// counters, so a test sees what the host called even after the context has let the plugin go.
class PluginProbe {
 public:
  explicit PluginProbe(const std::string& name) {
    handle_ = dlopen(plugin_file(name).c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(handle_ != nullptr, "dlopen " << plugin_file(name) << ": " << str(dlerror()));
    fn_ = reinterpret_cast<fake_counters_fn>(dlsym(handle_, FAKE_COUNTERS_SYMBOL));
    REQUIRE((fn_ != nullptr));
  }
  ~PluginProbe() {
    if (handle_) dlclose(handle_);
  }
  PluginProbe(const PluginProbe&) = delete;
  PluginProbe& operator=(const PluginProbe&) = delete;
  std::array<int64_t, FAKE_COUNTER_COUNT> counters() const {
    std::array<int64_t, FAKE_COUNTER_COUNT> c{};
    fn_(c.data(), FAKE_COUNTER_COUNT);
    return c;
  }
  int64_t operator[](fake_counter i) const { return counters()[static_cast<size_t>(i)]; }

 private:
  void* handle_ = nullptr;
  fake_counters_fn fn_ = nullptr;
};

// Owns one tensor reference.
struct Tensor {
  braid_tensor t = nullptr;
  Tensor() = default;
  ~Tensor() {
    if (t) CHECK_OK(braid_tensor_release(t));
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  braid_tensor* out() { return &t; }
};

template <class T>
std::vector<T> to_host(braid_tensor t, size_t n) {
  std::vector<T> v(n);
  REQUIRE_OK(braid_tensor_to_host(t, v.data(), n * sizeof(T)));
  return v;
}

}  // namespace

// ================================================================================================
TEST_SUITE("version and names") {

TEST_CASE("braid_version reports the header's ABI version") {
  CHECK(braid_version() == ((uint32_t{BRAID_ABI_MAJOR} << 16) | BRAID_ABI_MINOR));
  CHECK((braid_version() >> 16) == BRAID_ABI_MAJOR);
  CHECK((braid_version() & 0xffffu) == BRAID_ABI_MINOR);
}

TEST_CASE("braid_version_string names the library and ABI versions of the header") {
  const std::string want = std::to_string(BRAID_VERSION_MAJOR) + "." + std::to_string(BRAID_VERSION_MINOR) + "." +
                           std::to_string(BRAID_VERSION_PATCH) + " (ABI " + std::to_string(BRAID_ABI_MAJOR) + "." +
                           std::to_string(BRAID_ABI_MINOR) + ")";
  REQUIRE(braid_version_string() != nullptr);
  CHECK(std::string(braid_version_string()) == want);
  CHECK(braid_version_string() == braid_version_string());  // static storage, not rebuilt per call
  // The build takes its version (project(), SOVERSION, braidConfigVersion.cmake, braid.pc) from braid.h.
  const std::string header_version = want.substr(0, want.find(' '));
  CHECK(header_version == BRAID_TEST_PROJECT_VERSION);
}

TEST_CASE("braid_status_name names every status and never returns NULL") {
  const std::pair<braid_status, const char*> names[] = {
      {BRAID_OK, "BRAID_OK"},
      {BRAID_ERR_INVALID_ARGUMENT, "BRAID_ERR_INVALID_ARGUMENT"},
      {BRAID_ERR_SHAPE, "BRAID_ERR_SHAPE"},
      {BRAID_ERR_DTYPE, "BRAID_ERR_DTYPE"},
      {BRAID_ERR_DEVICE, "BRAID_ERR_DEVICE"},
      {BRAID_ERR_OUT_OF_MEMORY, "BRAID_ERR_OUT_OF_MEMORY"},
      {BRAID_ERR_UNSUPPORTED, "BRAID_ERR_UNSUPPORTED"},
      {BRAID_ERR_NOT_FOUND, "BRAID_ERR_NOT_FOUND"},
      {BRAID_ERR_ABI_MISMATCH, "BRAID_ERR_ABI_MISMATCH"},
      {BRAID_ERR_INVALID_STATE, "BRAID_ERR_INVALID_STATE"},
      {BRAID_ERR_KERNEL, "BRAID_ERR_KERNEL"},
      {BRAID_ERR_IO, "BRAID_ERR_IO"},
      {BRAID_ERR_TIMEOUT, "BRAID_ERR_TIMEOUT"},
      {BRAID_ERR_INTERNAL, "BRAID_ERR_INTERNAL"},
  };
  std::set<std::string> seen;
  for (auto& [status, name] : names) {
    const char* got = braid_status_name(status);
    REQUIRE(got != nullptr);
    CHECK(std::string(got) == name);
    seen.insert(got);
  }
  CHECK(seen.size() == std::size(names));
  for (int bad : {-1, 14, 99, 0x7fffffff}) {
    const char* got = braid_status_name(static_cast<braid_status>(bad));
    REQUIRE(got != nullptr);
    CHECK(std::string(got) == "BRAID_ERR_UNKNOWN");
  }
}

TEST_CASE("braid_dtype_name and braid_dtype_size cover every dtype") {
  struct Expect {
    braid_dtype dtype;
    const char* name;
    size_t size;
  };
  const Expect all[] = {
      {BRAID_FLOAT32, "float32", 4}, {BRAID_FLOAT64, "float64", 8}, {BRAID_INT32, "int32", 4},
      {BRAID_INT64, "int64", 8},     {BRAID_UINT8, "uint8", 1},     {BRAID_FLOAT16, "float16", 2},
      {BRAID_BFLOAT16, "bfloat16", 2},
  };
  static_assert(std::size(all) == BRAID_DTYPE_COUNT, "a dtype was added: extend this test");
  for (auto& e : all) {
    const std::string name = e.name;
    CAPTURE(name);
    REQUIRE(braid_dtype_name(e.dtype) != nullptr);
    CHECK(std::string(braid_dtype_name(e.dtype)) == e.name);
    CHECK(braid_dtype_size(e.dtype) == e.size);
  }
  for (int bad : {-1, static_cast<int>(BRAID_DTYPE_COUNT), 100, 0x7fffffff}) {
    CAPTURE(bad);
    REQUIRE(braid_dtype_name(static_cast<braid_dtype>(bad)) != nullptr);
    CHECK(std::string(braid_dtype_name(static_cast<braid_dtype>(bad))) == "invalid");
    CHECK(braid_dtype_size(static_cast<braid_dtype>(bad)) == 0);
  }
}

}  // TEST_SUITE

// ================================================================================================
TEST_SUITE("layout") {

TEST_CASE("every option/params/info struct starts with struct_size and its INIT macro sets it") {
  // (abi_layout.h pins the full layout at compile time; these are the runtime views of the rules.)
  static_assert(offsetof(braid_context_options, struct_size) == 0);
  static_assert(offsetof(braid_backend_info, struct_size) == 0);
  static_assert(offsetof(braid_device_info, struct_size) == 0);
  static_assert(offsetof(braid_memory_stats, struct_size) == 0);
  static_assert(offsetof(braid_conv2d_params, struct_size) == 0);
  static_assert(offsetof(braid_pool2d_params, struct_size) == 0);
  static_assert(offsetof(braid_batch_norm_params, struct_size) == 0);
  static_assert(offsetof(braid_adam_params, struct_size) == 0);

  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  CHECK(o.struct_size == sizeof(braid_context_options));
  CHECK(o.backends == nullptr);
  CHECK(o.backend_path == nullptr);
  CHECK(o.engine_mode == BRAID_ENGINE_DEFAULT);
  CHECK(o.max_inflight_ops == 0);
  CHECK(o.max_inflight_bytes == 0);
  CHECK(o.profile_path == nullptr);
  CHECK(o.seed == 0);

  braid_conv2d_params c = BRAID_CONV2D_PARAMS_INIT;
  CHECK(c.struct_size == sizeof(braid_conv2d_params));
  CHECK((c.stride[0] == 1 && c.stride[1] == 1 && c.padding[0] == 0 && c.padding[1] == 0));

  braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
  CHECK(p.struct_size == sizeof(braid_pool2d_params));
  CHECK(p.kind == BRAID_POOL_MAX);
  CHECK((p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 0 && p.padding[1] == 0 && p.global == 0));

  braid_batch_norm_params b = BRAID_BATCH_NORM_PARAMS_INIT;
  CHECK(b.struct_size == sizeof(braid_batch_norm_params));
  CHECK((b.eps == 1e-5 && b.momentum == 0.1 && b.training == 1));

  braid_adam_params a = BRAID_ADAM_PARAMS_INIT;
  CHECK(a.struct_size == sizeof(braid_adam_params));
  CHECK((a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.epsilon == 1e-8 && a.weight_decay == 0.0 &&
         a.step == 1));

  // ABI 1.2
  braid_context_options ctx_opts = BRAID_CONTEXT_OPTIONS_INIT;
  CHECK(ctx_opts.compute_queues == 0);
  braid_collective_options co = BRAID_COLLECTIVE_OPTIONS_INIT;
  CHECK(co.struct_size == sizeof(braid_collective_options));
  CHECK((co.op == BRAID_COLLECTIVE_SUM && co.algorithm == BRAID_ALLREDUCE_AUTO));
  braid_optimizer_params op = BRAID_OPTIMIZER_PARAMS_INIT;
  CHECK(op.struct_size == sizeof(braid_optimizer_params));
  CHECK((op.kind == BRAID_OPTIMIZER_SGD && op.learning_rate == 0.01 && op.momentum == 0.0 && op.weight_decay == 0.0 &&
         op.beta1 == 0.9 && op.beta2 == 0.999 && op.epsilon == 1e-8 && op.rescale_grad == 1.0));
  braid_trainer_options t = BRAID_TRAINER_OPTIONS_INIT;
  CHECK(t.struct_size == sizeof(braid_trainer_options));
  CHECK((t.optimizer.struct_size == sizeof(braid_optimizer_params) && t.bucket_bytes == 0 &&
         t.algorithm == BRAID_ALLREDUCE_AUTO));
}

TEST_CASE("the pinned layout matches this target") {
#if defined(__x86_64__) && defined(__LP64__)
  // Compile-time pins are active (abi_layout.h); spot-check a few at run time too so the report shows them.
  CHECK(sizeof(braid_context_options) == 72);  // 1.2: compute_queues
  CHECK(sizeof(braid_backend_info) == 48);
  CHECK(sizeof(braid_device_info) == 120);
  CHECK(sizeof(braid_memory_stats) == 56);
  CHECK(sizeof(braid_backend_api) == 192);
  CHECK(sizeof(braid_kernel_call) == 1664);
  CHECK(offsetof(braid_context_options, engine_mode) == 24);
#else
  MESSAGE("layout pins are only checked on x86-64");
#endif
}

}  // TEST_SUITE

// ================================================================================================
TEST_SUITE("growth") {

TEST_CASE("an older, shorter braid_context_options gets defaults for the fields it lacks") {
  CleanPluginEnv env;
  // A 1.0-era caller that only knew struct_size, backends and backend_path. The bytes after its
  // struct are garbage that must not be read: engine_mode 77 would be refused if it were.
  alignas(braid_context_options) unsigned char raw[sizeof(braid_context_options)];
  std::memset(raw, 0xA5, sizeof raw);
  auto* o = reinterpret_cast<braid_context_options*>(raw);
  o->struct_size = static_cast<uint32_t>(offsetof(braid_context_options, engine_mode));
  o->backends = "newer_minor";
  o->backend_path = kPluginDir.c_str();
  o->engine_mode = static_cast<braid_engine_mode>(77);
  o->profile_path = "/nonexistent-dir/should-not-be-written.json";
  Context c(o);
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  REQUIRE(all.size() == 1);  // `backends` (inside the prefix) was honoured
  CHECK(all[0].name == "newer_minor");
  CHECK(all[0].loaded == 1);
  CHECK(c.devices() == 1);
}

TEST_CASE("a newer, longer braid_context_options is accepted (the unknown tail is ignored)") {
  CleanPluginEnv env;
  struct Newer {
    braid_context_options v1_0;
    uint64_t future_field_a;
    const char* future_field_b;
  } n{};
  n.v1_0 = BRAID_CONTEXT_OPTIONS_INIT;
  n.v1_0.struct_size = sizeof n;
  n.v1_0.backends = "newer_minor";
  n.v1_0.backend_path = kPluginDir.c_str();
  n.future_field_a = 12345;
  n.future_field_b = "future";
  Context c(&n.v1_0);
  REQUIRE_CREATED(c);
  CHECK(c.devices() == 1);
}

TEST_CASE("struct_size 0..3 (and absurdly large) is refused with BRAID_ERR_INVALID_ARGUMENT") {
  for (uint32_t size : {0u, 1u, 2u, 3u, 1u << 20}) {
    CAPTURE(size);
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.struct_size = size;
    braid_context ctx = reinterpret_cast<braid_context>(uintptr_t{0x1});  // must be overwritten with NULL
    CHECK_FAILS(braid_context_create(&o, &ctx), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create", "struct_size");
    CHECK(ctx == nullptr);
  }
}

TEST_CASE("out-structs with a smaller struct_size only get that prefix written") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  REQUIRE(c.devices() == 1);
  constexpr unsigned char kSentinel = 0xCD;

  SUBCASE("braid_device_info") {
    braid_device_info full{};
    full.struct_size = sizeof full;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &full));
    CHECK(full.struct_size == sizeof full);

    for (size_t prefix : {offsetof(braid_device_info, kind), offsetof(braid_device_info, uuid),
                          offsetof(braid_device_info, l1_cache_bytes), sizeof(uint32_t) + 4}) {
      CAPTURE(prefix);
      alignas(braid_device_info) unsigned char raw[sizeof(braid_device_info)];
      std::memset(raw, kSentinel, sizeof raw);
      auto* info = reinterpret_cast<braid_device_info*>(raw);
      info->struct_size = static_cast<uint32_t>(prefix);
      REQUIRE_OK(braid_context_device_info(c.ctx, 0, info));
      CHECK(info->struct_size == prefix);
      // The prefix holds the same bytes as a full query (pointers owned by the context are stable).
      CHECK(std::memcmp(raw + sizeof(uint32_t), reinterpret_cast<unsigned char*>(&full) + sizeof(uint32_t),
                        prefix - sizeof(uint32_t)) == 0);
      bool untouched = std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; });
      CHECK_MESSAGE(untouched, "bytes beyond struct_size " << prefix << " were written");
    }
  }

  SUBCASE("braid_backend_info") {
    const size_t prefix = offsetof(braid_backend_info, loaded);
    alignas(braid_backend_info) unsigned char raw[sizeof(braid_backend_info)];
    std::memset(raw, kSentinel, sizeof raw);
    auto* info = reinterpret_cast<braid_backend_info*>(raw);
    info->struct_size = static_cast<uint32_t>(prefix);
    REQUIRE_OK(braid_context_backend_info(c.ctx, 0, info));
    CHECK(info->struct_size == prefix);
    CHECK(std::string(info->name) == "newer_minor");
    CHECK(info->abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; }));
  }

  SUBCASE("braid_memory_stats") {
    const size_t prefix = offsetof(braid_memory_stats, peak_allocated_bytes);
    alignas(braid_memory_stats) unsigned char raw[sizeof(braid_memory_stats)];
    std::memset(raw, kSentinel, sizeof raw);
    auto* stats = reinterpret_cast<braid_memory_stats*>(raw);
    stats->struct_size = static_cast<uint32_t>(prefix);
    REQUIRE_OK(braid_memory_stats_get(c.ctx, 0, stats));
    CHECK(stats->struct_size == prefix);
    CHECK(stats->allocated_bytes == 0);
    CHECK(std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; }));
  }

  SUBCASE("a larger struct_size from a newer caller gets the whole current struct and its size") {
    struct Newer {
      braid_device_info v1_0;
      uint64_t future[4];
    } n;
    std::memset(&n, kSentinel, sizeof n);
    n.v1_0.struct_size = sizeof n;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &n.v1_0));
    CHECK(n.v1_0.struct_size == sizeof(braid_device_info));  // tells the caller how much is valid
    CHECK(std::string(n.v1_0.id) == "newer_minor:0");
    const auto* tail = reinterpret_cast<const unsigned char*>(&n.future);
    CHECK(std::all_of(tail, tail + sizeof n.future, [](unsigned char b) { return b == kSentinel; }));
  }
}

}  // TEST_SUITE

// ================================================================================================
TEST_SUITE("symbols") {

// Every function declared in braid.h (grep BRAID_API). The header is parsed below as well, so a
// function added to braid.h but not to this list fails the test.
const char* const kApiFunctions[] = {
    "braid_version", "braid_last_error", "braid_status_name", "braid_dtype_name", "braid_dtype_size",
    "braid_context_create", "braid_context_retain", "braid_context_release", "braid_context_backend_count",
    "braid_context_backend_info", "braid_context_device_count", "braid_context_find_device",
    "braid_context_device_info", "braid_wait_all", "braid_context_set_seed", "braid_memory_stats_get",
    "braid_memory_empty_cache", "braid_memory_reset_peak", "braid_profiler_start", "braid_profiler_stop",
    "braid_tensor_empty", "braid_tensor_from_host", "braid_tensor_retain", "braid_tensor_release",
    "braid_tensor_ndim", "braid_tensor_shape", "braid_tensor_dtype", "braid_tensor_device", "braid_tensor_numel",
    "braid_tensor_wait_to_read", "braid_tensor_to_host", "braid_tensor_write_host", "braid_full", "braid_arange",
    "braid_random_uniform", "braid_random_normal", "braid_unary", "braid_binary", "braid_binary_scalar",
    "braid_reduce", "braid_argmax", "braid_matmul", "braid_reshape", "braid_slice", "braid_transpose",
    "braid_concat", "braid_copy", "braid_cast", "braid_copy_into", "braid_conv2d", "braid_pool2d",
    "braid_batch_norm", "braid_softmax", "braid_softmax_cross_entropy", "braid_dropout", "braid_sgd_update",
    "braid_sgd_momentum_update", "braid_adam_update",
    // data (ABI 1.1)
    "braid_dataset_open", "braid_dataset_retain", "braid_dataset_release", "braid_dataset_size",
    "braid_dataset_image_shape", "braid_batch_iterator_create", "braid_batch_iterator_retain",
    "braid_batch_iterator_release", "braid_batch_iterator_next", "braid_batch_iterator_batches",
    // autograd
    "braid_autograd_set_recording", "braid_autograd_is_recording", "braid_tensor_attach_grad", "braid_tensor_grad",
    "braid_backward", "braid_conv2d_backward_data", "braid_conv2d_backward_weight", "braid_pool2d_backward",
    "braid_batch_norm_backward", "braid_softmax_cross_entropy_backward",
    // parallel (ABI 1.2)
    "braid_split_sizes", "braid_split_and_load", "braid_replicate", "braid_allreduce", "braid_reduce_to",
    "braid_broadcast", "braid_all_gather", "braid_reduce_scatter", "braid_kvstore_create", "braid_kvstore_retain",
    "braid_kvstore_release", "braid_kvstore_type", "braid_kvstore_init", "braid_kvstore_push", "braid_kvstore_pull",
    "braid_kvstore_pushpull", "braid_kvstore_set_optimizer", "braid_trainer_create", "braid_trainer_retain",
    "braid_trainer_release", "braid_trainer_step", "braid_trainer_allreduce_grads", "braid_trainer_update",
    "braid_trainer_set_learning_rate", "braid_trainer_learning_rate",
    // library version (ABI 1.3)
    "braid_version_string",
    // what a device reaches, checkpoints (ABI 1.4)
    "braid_device_measure", "braid_save_safetensors", "braid_safetensors_names", "braid_load_safetensors",
    // graph mode (ABI 1.5)
    "braid_graph_trace_begin", "braid_graph_trace_end", "braid_graph_trace_abort", "braid_graph_retain",
    "braid_graph_release", "braid_graph_optimize", "braid_graph_run", "braid_graph_get_info", "braid_graph_get_node",
    "braid_graph_save", "braid_graph_load", "braid_hybrid_create", "braid_hybrid_retain", "braid_hybrid_release",
    "braid_hybrid_call", "braid_hybrid_graph", "braid_graph_get_input", "braid_graph_get_output",
    // log (ABI 1.5)
    "braid_set_log_callback", "braid_log_level_name",
};

TEST_CASE("the symbol list covers every BRAID_API function of braid.h") {
  std::ifstream in(BRAID_TEST_BRAID_H);
  REQUIRE_MESSAGE(in.good(), "cannot read " << str(BRAID_TEST_BRAID_H));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string header = ss.str();
  // "BRAID_API <return type> <name>(": the identifier right before the first '(' after the macro
  // (the macro's own #define lines are followed by __declspec/__attribute__ and skipped).
  std::set<std::string> declared;
  auto is_ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = header.find("BRAID_API "); at != std::string::npos; at = header.find("BRAID_API ", at + 1)) {
    const size_t paren = header.find('(', at);
    if (paren == std::string::npos) break;
    size_t end = paren;
    while (end > at && std::isspace(static_cast<unsigned char>(header[end - 1]))) --end;
    size_t begin = end;
    while (begin > at && is_ident(header[begin - 1])) --begin;
    const std::string name = header.substr(begin, end - begin);
    if (name.rfind("braid_", 0) == 0) declared.insert(name);
  }
  const std::set<std::string> listed(std::begin(kApiFunctions), std::end(kApiFunctions));
  CHECK(listed.size() == std::size(kApiFunctions));  // no duplicates
  for (auto& f : declared) CHECK_MESSAGE(listed.count(f) == 1, f << " is declared in braid.h but not listed here");
  for (auto& f : listed) CHECK_MESSAGE(declared.count(f) == 1, f << " is listed here but not declared in braid.h");
  CHECK(declared.size() == 58 + 10 + 10 + 25 + 1 + 4 + 20);  // ABI 1.1 (+10: data, +10: autograd), 1.2 (+25: parallel), 1.3 (+1), 1.4 (+4), 1.5 (+18: graph, +2: log)
}

TEST_CASE("libbraid.so exports every function of braid.h") {
  void* lib = dlopen(BRAID_TEST_LIBBRAID, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib != nullptr, "dlopen " << str(BRAID_TEST_LIBBRAID) << ": " << str(dlerror()));
  for (const char* fn : kApiFunctions) {
    const std::string function = fn;
    CAPTURE(function);
    dlerror();
    void* sym = dlsym(lib, fn);
    CHECK_MESSAGE(sym != nullptr, str(fn) << " missing from " << str(BRAID_TEST_LIBBRAID) << ": " << str(dlerror()));
  }
  // The library this test is linked against is that same file.
  CHECK(dlsym(lib, "braid_version") == reinterpret_cast<void*>(&braid_version));
  dlclose(lib);
}

}  // TEST_SUITE

// ================================================================================================
TEST_SUITE("plugins") {

TEST_CASE("abi_major2: a plugin that refuses host major 1 is listed, not loaded") {
  CleanPluginEnv env;
  Context c("abi_major2");
  REQUIRE_CREATED(c);
  auto b = backend_named(c.ctx, "abi_major2");
  CHECK(b.loaded == 0);
  CHECK(b.device_count == 0);
  CHECK(b.abi_major == 0);  // it reported no table
  CHECK(ends_with(b.path, "/libbraid-backend-abi_major2.so"));
  CHECK_CONTAINS(b.reason, "major version mismatch");
  CHECK_CONTAINS(b.reason, std::to_string(BRAID_BACKEND_ABI_MAJOR) + "." + std::to_string(BRAID_BACKEND_ABI_MINOR));
  CHECK(c.devices() == 0);
}

TEST_CASE("abi_table_major2: a table of major 2 is refused and never called") {
  CleanPluginEnv env;
  PluginProbe probe("abi_table_major2");
  const auto before = probe.counters();
  {
    Context c("abi_table_major2");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "abi_table_major2");
    CHECK(b.loaded == 0);
    CHECK(b.device_count == 0);
    CHECK(b.abi_major == 2);
    CHECK(b.abi_minor == 3);
    CHECK_CONTAINS(b.reason, "major version mismatch");
    CHECK_CONTAINS(b.reason, "2.3");
    CHECK(c.devices() == 0);
  }
  const auto after = probe.counters();
  CHECK(after[FAKE_QUERIES] - before[FAKE_QUERIES] == 1);
  CHECK(after[FAKE_DEVICE_COUNT_CALLS] == before[FAKE_DEVICE_COUNT_CALLS]);  // nothing in the table was called
  CHECK(after[FAKE_LIVE_DEVICES] == 0);
}

TEST_CASE("older_minor: a plugin of ABI 1.0 (shorter table) is accepted; 1.1 fields are not read") {
  CleanPluginEnv env;
  PluginProbe probe("older_minor");
  const auto before = probe.counters();
  {
    Context c("older_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "older_minor");
    CHECK(b.loaded == 1);
    CHECK(b.abi_minor == 0);
    CHECK(b.reason.empty());
    REQUIRE(c.devices() == 1);
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &info));
    CHECK(std::string(info.id) == "older_minor:0");
    CHECK(std::string(info.properties_json) == "{}");
    const int64_t shape[1] = {3};
    const float src[3] = {1, 2, 3};
    Tensor x;
    REQUIRE_OK(braid_tensor_from_host(c.ctx, 0, BRAID_FLOAT32, 1, shape, src, sizeof src, x.out()));
    CHECK(to_host<float>(x.t, 3) == std::vector<float>(src, src + 3));
  }
  CHECK(probe.counters()[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);
}

TEST_CASE("newer_minor: a plugin of a newer minor with a larger table is accepted and usable") {
  CleanPluginEnv env;
  PluginProbe probe("newer_minor");
  const auto before = probe.counters();
  {
    Context c("newer_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "newer_minor");
    CHECK(b.loaded == 1);
    CHECK(b.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(b.abi_minor == BRAID_BACKEND_ABI_MINOR + 1);
    CHECK(b.device_count == 1);
    CHECK(b.reason.empty());
    CHECK(ends_with(b.path, "/libbraid-backend-newer_minor.so"));
    REQUIRE(c.devices() == 1);

    // The host opened the device: 3 queues and 3 timeline semaphores (compute, transfer, and the
    // comm compute queue of the collectives).
    auto open = probe.counters();
    CHECK(open[FAKE_LIVE_DEVICES] == 1);
    CHECK(open[FAKE_LIVE_QUEUES] == 3);
    CHECK(open[FAKE_LIVE_SEMAPHORES] == 3);

    braid_device dev = -1;
    REQUIRE_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
    CHECK(dev == 0);
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_device_info(c.ctx, dev, &info));
    CHECK(std::string(info.id) == "newer_minor:0");
    CHECK(std::string(info.backend) == "newer_minor");
    CHECK(std::string(info.name) == "braid fake device 0 (newer_minor)");
    CHECK(info.kind == BRAID_DEVICE_OTHER);
    CHECK(info.backend_index == 0);
    CHECK(info.uuid[0] == 0xB0);
    CHECK(info.uuid[15] == 0xBF);
    CHECK(info.memory_bytes == (1ull << 30));
    CHECK(info.compute_units == 3);
    CHECK(info.compute_queues == 1);
    CHECK(info.transfer_queues == 1);
    CHECK(info.l1_cache_bytes == 32 * 1024);
    CHECK(info.l2_cache_bytes == 1024 * 1024);
    CHECK(info.l3_cache_bytes == 0);
    CHECK(info.dtype_mask == 0);
    CHECK(std::string(info.properties_json) == R"({"fake_heaps":[{"bytes":1073741824}],"fake_subgroup":7})");

    // No kernels: every creation op fails synchronously with a message naming op, backend and device.
    const int64_t shape[2] = {2, 3};
    braid_tensor t = reinterpret_cast<braid_tensor>(uintptr_t{0x1});
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_FLOAT32, 2, shape, 1.0, &t), BRAID_ERR_UNSUPPORTED, "braid_full",
                "the newer_minor backend has no float32 kernel");
    CHECK_CONTAINS(braid_last_error(), "newer_minor:0");
    CHECK(t == nullptr);
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_INT64, 2, shape, 1.0, &t), BRAID_ERR_UNSUPPORTED, "braid_full", "int64");
    CHECK_FAILS(braid_arange(c.ctx, dev, BRAID_FLOAT64, 0, 4, 1, &t), BRAID_ERR_UNSUPPORTED, "braid_arange",
                "newer_minor");
    CHECK_FAILS(braid_random_uniform(c.ctx, dev, BRAID_FLOAT32, 2, shape, 0, 1, &t), BRAID_ERR_UNSUPPORTED,
                "braid_random_uniform", "newer_minor");

    // Memory and copies work: from_host, write_host (an upload through the transfer queue), to_host.
    {
      const float src[6] = {1, 2, 3, 4, 5, 6};
      Tensor x;
      REQUIRE_OK(braid_tensor_from_host(c.ctx, dev, BRAID_FLOAT32, 2, shape, src, sizeof src, x.out()));
      CHECK(to_host<float>(x.t, 6) == std::vector<float>(src, src + 6));
      const float next[6] = {-1, -2, -3, -4, -5, -6};
      REQUIRE_OK(braid_tensor_write_host(x.t, next, sizeof next));
      CHECK(to_host<float>(x.t, 6) == std::vector<float>(next, next + 6));
      CHECK_OK(braid_tensor_wait_to_read(x.t));
      // An op that needs a kernel on an existing tensor is refused up front, too.
      Tensor y;
      CHECK(braid_unary(BRAID_UNARY_NEG, x.t, y.out()) == BRAID_ERR_UNSUPPORTED);
      CHECK(y.t == nullptr);
      braid_memory_stats ms{};
      ms.struct_size = sizeof ms;
      REQUIRE_OK(braid_memory_stats_get(c.ctx, dev, &ms));
      CHECK(ms.allocated_bytes >= sizeof src);
      CHECK(probe[FAKE_LIVE_BUFFERS] >= 1);
    }
    CHECK_OK(braid_wait_all(c.ctx));
    CHECK_OK(braid_memory_empty_cache(c.ctx, dev));
    CHECK(probe[FAKE_SUBMISSIONS] > before[FAKE_SUBMISSIONS]);
  }
  // Release is clean: everything the host created is destroyed and the query is balanced.
  const auto after = probe.counters();
  CHECK(after[FAKE_LIVE_DEVICES] == 0);
  CHECK(after[FAKE_LIVE_QUEUES] == 0);
  CHECK(after[FAKE_LIVE_SEMAPHORES] == 0);
  CHECK(after[FAKE_LIVE_BUFFERS] == 0);
  CHECK(after[FAKE_QUERIES] - before[FAKE_QUERIES] == 1);
  CHECK(after[FAKE_SHUTDOWNS] - before[FAKE_SHUTDOWNS] == 1);
  CHECK(after[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);  // no kernel, no 1.1 function
}

TEST_CASE("missing_vendor: loads with zero devices and the vendor library as the reason") {
  CleanPluginEnv env;
  PluginProbe probe("missing_vendor");
  const auto before = probe.counters();
  {
    Context c("missing_vendor,newer_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "missing_vendor");
    CHECK(b.loaded == 1);
    CHECK(b.device_count == 0);
    CHECK(b.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(b.reason == "vendor library libbraid-nonexistent-vendor.so.1 not found");
    // The other backend of the context is unaffected.
    auto n = backend_named(c.ctx, "newer_minor");
    CHECK(n.loaded == 1);
    CHECK(n.device_count == 1);
    REQUIRE(c.devices() == 1);
    braid_device dev = -1;
    CHECK_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
    CHECK_FAILS(braid_context_find_device(c.ctx, "missing_vendor:0", &dev), BRAID_ERR_NOT_FOUND,
                "braid_context_find_device", "missing_vendor:0");
    // The vendor library was looked for once, lazily (device_count, not query).
    CHECK(probe[FAKE_VENDOR_DLOPENS] - before[FAKE_VENDOR_DLOPENS] == 1);
  }
  const auto after = probe.counters();
  CHECK(after[FAKE_SHUTDOWNS] - before[FAKE_SHUTDOWNS] == 1);  // a loaded plugin is shut down even with 0 devices
}

TEST_CASE("no_query: a library without braid_backend_query is not a braid plugin") {
  CleanPluginEnv env;
  Context c("no_query");
  REQUIRE_CREATED(c);
  auto b = backend_named(c.ctx, "no_query");
  CHECK(b.loaded == 0);
  CHECK(b.abi_major == 0);
  CHECK_CONTAINS(b.reason, "not a braid plugin");
  CHECK_CONTAINS(b.reason, "braid_backend_query");
}

TEST_CASE("holes: a table with a NULL function is refused, naming the function") {
  CleanPluginEnv env;
  PluginProbe probe("holes");
  const auto before = probe.counters();
  {
    Context c("holes");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "holes");
    CHECK(b.loaded == 0);
    CHECK(b.device_count == 0);
    CHECK_CONTAINS(b.reason, "queue_flush");
    CHECK_CONTAINS(b.reason, "lacks");
    CHECK(c.devices() == 0);
  }
  CHECK(probe[FAKE_DEVICE_COUNT_CALLS] == before[FAKE_DEVICE_COUNT_CALLS]);
}

TEST_CASE("other broken plugins are listed with a reason") {
  CleanPluginEnv env;
  SUBCASE("short_table: struct_size smaller than ABI 1.0's table") {
    Context c("short_table");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "short_table");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, std::to_string(offsetof(braid_backend_api, supports)) + " bytes");
    CHECK_CONTAINS(b.reason, "smaller than ABI 1.0's " +
                                 std::to_string(offsetof(braid_backend_api, shutdown) + sizeof(void (*)(void))));
  }
  SUBCASE("query_fails: the query's own error is reported") {
    Context c("query_fails");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "query_fails");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "braid_backend_query");
    CHECK_CONTAINS(b.reason, "BRAID_ERR_INTERNAL");
  }
  SUBCASE("null_table: BRAID_OK without a table") {
    Context c("null_table");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "null_table");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "braid_backend_query");
  }
  SUBCASE("unresolved: dlopen fails and its message is kept") {
    Context c("unresolved");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "unresolved");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "cannot load plugin");
    CHECK_CONTAINS(b.reason, "braid_fake_symbol_nobody_defines");
  }
  SUBCASE("a name with no plugin file") {
    Context c("doesnotexist");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "doesnotexist");
    CHECK(b.loaded == 0);
    CHECK(b.path.empty());
    CHECK_CONTAINS(b.reason, "libbraid-backend-doesnotexist.so");
    CHECK(c.devices() == 0);
  }
}

TEST_CASE("every test plugin at once: the broken ones never break the host") {
  CleanPluginEnv env;
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backend_path = kPluginDir.c_str();  // backends NULL and BRAID_BACKENDS unset: load everything found
  Context c(&o);
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  std::set<std::string> names;
  for (auto& b : all) {
    CAPTURE(b.name);
    CHECK(names.insert(b.name).second);  // each name once
    if (b.loaded == 0) CHECK_FALSE(b.reason.empty());
  }
  for (const char* want : {"abi_major2", "abi_table_major2", "newer_minor", "missing_vendor", "no_query", "holes",
                           "short_table", "query_fails", "null_table", "unresolved"})
    CHECK_MESSAGE(names.count(want) == 1, str(want) << " was not listed");
  CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
  if (kHaveCpu) CHECK(backend_named(c.ctx, "cpu").loaded == 1);  // found next to libbraid
  braid_device dev = -1;
  CHECK_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
}

TEST_CASE("BRAID_BACKENDS naming a backend that does not exist: listed with a reason, context created") {
  CleanPluginEnv clean;
  EnvVar backends("BRAID_BACKENDS", "nosuchbackend");
  Context c(static_cast<const braid_context_options*>(nullptr));
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "nosuchbackend");
  CHECK(all[0].loaded == 0);
  CHECK_CONTAINS(all[0].reason, "libbraid-backend-nosuchbackend.so");
  CHECK(c.devices() == 0);
}

TEST_CASE("BRAID_BACKENDS and BRAID_BACKEND_PATH are used when the options leave them NULL") {
  CleanPluginEnv clean;
  EnvVar backends("BRAID_BACKENDS", "newer_minor,missing_vendor");
  EnvVar path("BRAID_BACKEND_PATH", kPluginDir.c_str());
  SUBCASE("from the environment") {
    Context c(static_cast<const braid_context_options*>(nullptr));
    REQUIRE_CREATED(c);
    CHECK(backends_of(c.ctx).size() == 2);
    CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
    CHECK(c.devices() == 1);
  }
  SUBCASE("options override the environment") {
    Context c("holes");
    REQUIRE_CREATED(c);
    auto all = backends_of(c.ctx);
    REQUIRE(all.size() == 1);
    CHECK(all[0].name == "holes");
  }
}

TEST_CASE("backend_path: colon-separated, empty items and missing directories are skipped, first file wins") {
  CleanPluginEnv env;
  SUBCASE("several directories") {
    const std::string path = "/nonexistent-braid-dir::" + kPluginDir + ":";
    Context c("newer_minor", path.c_str());
    REQUIRE_CREATED(c);
    CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
  }
  SUBCASE("the first directory holding a name wins") {
    // A directory with a broken plugin under the good plugin's name.
    char tmpl[] = "/tmp/braid-abi-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string shadow = tmpl;
    const std::string shadow_file = shadow + "/libbraid-backend-newer_minor.so";
    std::filesystem::copy_file(plugin_file("holes"), shadow_file);
    {
      const std::string first_shadow = shadow + ":" + kPluginDir;
      Context c("newer_minor", first_shadow.c_str());
      REQUIRE_CREATED(c);
      auto b = backend_named(c.ctx, "newer_minor");
      CHECK(b.path == shadow_file);
      CHECK(b.loaded == 0);
      CHECK_CONTAINS(b.reason, "queue_flush");
    }
    {
      const std::string first_good = kPluginDir + ":" + shadow;
      Context c("newer_minor", first_good.c_str());
      REQUIRE_CREATED(c);
      auto b = backend_named(c.ctx, "newer_minor");
      CHECK(b.path == plugin_file("newer_minor"));
      CHECK(b.loaded == 1);
    }
    std::filesystem::remove_all(shadow);
  }
}

// KNOWN BUG (runtime/plugin/backend.cpp, `b->name = api->name`): the listed name and the device ids
// come from the table's `name`, not from the file name that BRAID_BACKENDS selected. A plugin file
// whose table reports another backend's name (a renamed or copied plugin) yields two backends of one
// name and two devices with the same id ("newer_minor:0" twice), and "other:0" cannot be found.
// may_fail until device ids are unique (either name source is fine for this test).
TEST_CASE("device ids stay unique when a plugin file reports another backend's name") {
  CleanPluginEnv env;
  char tmpl[] = "/tmp/braid-abi-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  std::filesystem::copy_file(plugin_file("newer_minor"), dir + "/libbraid-backend-other.so");
  {
    const std::string path = dir + ":" + kPluginDir;
    Context c("other,newer_minor", path.c_str());
    REQUIRE_CREATED(c);
    CHECK(backends_of(c.ctx).size() == 2);
    const int32_t n = c.devices();
    CHECK(n == 2);
    std::set<std::string> ids;
    for (int32_t i = 0; i < n; ++i) {
      braid_device_info info{};
      info.struct_size = sizeof info;
      REQUIRE_OK(braid_context_device_info(c.ctx, i, &info));
      CHECK_MESSAGE(ids.insert(info.id).second, "device id " << str(info.id) << " is not unique");
      braid_device found = -1;
      CHECK_OK(braid_context_find_device(c.ctx, info.id, &found));
      CHECK(found == i);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu next to broken plugins: cpu,abi_major2,missing_vendor" * doctest::skip(!kHaveCpu)) {
  CleanPluginEnv env;
  Context c("cpu,abi_major2,missing_vendor");
  REQUIRE_CREATED(c);
  CHECK(backends_of(c.ctx).size() == 3);
  auto cpu = backend_named(c.ctx, "cpu");
  CHECK(cpu.loaded == 1);
  CHECK(cpu.device_count >= 1);
  CHECK(cpu.reason.empty());
  CHECK(cpu.path.find(kPluginDir) == std::string::npos);  // the real plugin, next to libbraid
  auto major2 = backend_named(c.ctx, "abi_major2");
  CHECK(major2.loaded == 0);
  CHECK_CONTAINS(major2.reason, "major version mismatch");
  auto vendor = backend_named(c.ctx, "missing_vendor");
  CHECK(vendor.loaded == 1);
  CHECK(vendor.device_count == 0);
  CHECK(vendor.reason == "vendor library libbraid-nonexistent-vendor.so.1 not found");
  CHECK(c.devices() == cpu.device_count);

  braid_device dev = -1;
  REQUIRE_OK(braid_context_find_device(c.ctx, "cpu:0", &dev));
  braid_device_info info{};
  info.struct_size = sizeof info;
  REQUIRE_OK(braid_context_device_info(c.ctx, dev, &info));
  CHECK(info.kind == BRAID_DEVICE_CPU);
  CHECK((info.dtype_mask & (1u << BRAID_FLOAT32)) != 0);
  const int64_t shape[2] = {3, 4};
  Tensor t;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_FLOAT32, 2, shape, 2.5, t.out()));
  CHECK(to_host<float>(t.t, 12) == std::vector<float>(12, 2.5f));
  Tensor u;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_INT64, 2, shape, -7, u.out()));
  CHECK(to_host<int64_t>(u.t, 12) == std::vector<int64_t>(12, -7));
  CHECK_OK(braid_wait_all(c.ctx));
}

}  // TEST_SUITE

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
  CHECK_FAILS(braid_tensor_to_host(t, buf, sizeof buf), BRAID_ERR_INVALID_ARGUMENT, "braid_tensor_to_host",
              "released");
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

}  // TEST_SUITE

// ================================================================================================
TEST_SUITE("fork") {

namespace {

// Exit codes of a forked child (0 = all good), so the parent can say which step failed.
enum ChildResult {
  kChildOk = 0,
  kOldContextUsable = 10,
  kOldContextMessage,
  kOldTensorUsable,
  kNewContextFailed,
  kNewContextNoDevice,
  kNewWorkFailed,
  kNewValuesWrong,
  kNewReleaseFailed,
  kOldReleaseFailed,
  // Only from the driver process of the GEMM case:
  kDriverSetupFailed = 40,
  kDriverForkFailed,
  kDriverChildHung,
  kDriverChildFailed,
  kDriverWaitFailed,
  kDriverValuesWrong,
};

const char* child_result_name(int code) {
  switch (code) {
    case kChildOk: return "ok";
    case kOldContextUsable: return "the parent's context did not fail with BRAID_ERR_INVALID_STATE";
    case kOldContextMessage: return "the error for the parent's context does not mention fork";
    case kOldTensorUsable: return "a tensor of the parent's context did not fail with BRAID_ERR_INVALID_STATE";
    case kNewContextFailed: return "a fresh context could not be created";
    case kNewContextNoDevice: return "the fresh context has no device";
    case kNewWorkFailed: return "work on the fresh context failed";
    case kNewValuesWrong: return "the fresh context computed wrong values";
    case kNewReleaseFailed: return "releasing the fresh context failed";
    case kOldReleaseFailed: return "releasing the parent's context failed";
    case kDriverSetupFailed: return "driver: setting up the context and work failed";
    case kDriverForkFailed: return "driver: fork failed";
    case kDriverChildHung: return "driver: the child hung (killed by SIGALRM)";
    case kDriverChildFailed: return "driver: the child's checks failed";
    case kDriverWaitFailed: return "driver: braid_wait_all after the fork failed";
    case kDriverValuesWrong: return "driver: the parent's results after the fork are wrong";
    default: return "unknown";
  }
}

// In a child: no doctest macros (the parent reports), only exit codes. `cpu` selects real kernels
// (a large fill split over TBB workers and an OpenBLAS GEMM); otherwise host copies on the fake device.
int child_checks(braid_context parent_ctx, braid_tensor parent_tensor, const char* backends, bool cpu) {
  int32_t n = 0;
  if (braid_context_device_count(parent_ctx, &n) != BRAID_ERR_INVALID_STATE) return kOldContextUsable;
  if (!std::strstr(braid_last_error(), "fork")) return kOldContextMessage;
  const int64_t shape1[1] = {4};
  braid_tensor t = nullptr;
  if (braid_tensor_empty(parent_ctx, 0, BRAID_FLOAT32, 1, shape1, &t) != BRAID_ERR_INVALID_STATE)
    return kOldContextUsable;
  if (braid_wait_all(parent_ctx) != BRAID_ERR_INVALID_STATE) return kOldContextUsable;
  int32_t ndim = 0;
  if (braid_tensor_ndim(parent_tensor, &ndim) != BRAID_ERR_INVALID_STATE) return kOldTensorUsable;

  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = backends;
  o.backend_path = kPluginDir.c_str();
  braid_context ctx = nullptr;
  if (braid_context_create(&o, &ctx) != BRAID_OK) return kNewContextFailed;
  if (braid_context_device_count(ctx, &n) != BRAID_OK || n < 1) return kNewContextNoDevice;
  if (cpu) {
    const int64_t big[2] = {1024, 1024};
    braid_tensor x = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, big, 4.25, &x) != BRAID_OK) return kNewWorkFailed;
    std::vector<float> got(1024 * 1024, 0.0f);
    if (braid_tensor_to_host(x, got.data(), got.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (std::any_of(got.begin(), got.end(), [](float v) { return v != 4.25f; })) return kNewValuesWrong;
    const int64_t sq[2] = {128, 128};
    braid_tensor ones = nullptr, prod = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, sq, 1.0, &ones) != BRAID_OK) return kNewWorkFailed;
    if (braid_matmul(ones, ones, 0, 0, &prod) != BRAID_OK) return kNewWorkFailed;
    std::vector<float> p(128 * 128, 0.0f);
    if (braid_tensor_to_host(prod, p.data(), p.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (std::any_of(p.begin(), p.end(), [](float v) { return v != 128.0f; })) return kNewValuesWrong;
    if (braid_tensor_release(x) != BRAID_OK || braid_tensor_release(ones) != BRAID_OK ||
        braid_tensor_release(prod) != BRAID_OK)
      return kNewWorkFailed;
  } else {
    const int64_t shape[2] = {5, 7};
    std::vector<float> got(35, 0.0f), want(35, 0.0f);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i) * 0.5f;
    braid_tensor x = nullptr;
    if (braid_tensor_empty(ctx, 0, BRAID_FLOAT32, 2, shape, &x) != BRAID_OK) return kNewWorkFailed;
    if (braid_tensor_write_host(x, want.data(), want.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (braid_tensor_to_host(x, got.data(), got.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (got != want) return kNewValuesWrong;
    if (braid_tensor_release(x) != BRAID_OK) return kNewWorkFailed;
  }
  if (braid_wait_all(ctx) != BRAID_OK) return kNewWorkFailed;
  if (braid_context_release(ctx) != BRAID_OK) return kNewReleaseFailed;
  // Dropping the inherited context in the child is allowed (it is leaked, never joined).
  if (braid_context_release(parent_ctx) != BRAID_OK) return kOldReleaseFailed;
  return kChildOk;
}

// Runs body in a forked process bounded by alarm(seconds); returns its exit code, or -signal.
template <class F>
int run_forked(unsigned seconds, F&& body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    alarm(seconds);  // a hang (a runtime or library lock held across fork) becomes SIGALRM
    _exit(body());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1001;
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1002;
}

void check_child_result(int code, const char* who) {
  if (code < 0) {
    FAIL(str(who) << " was killed by signal " << -code << (-code == SIGALRM ? " (SIGALRM: it hung)" : ""));
  }
  CHECK_MESSAGE(code == kChildOk, str(who) << " exit code " << code << ": " << str(child_result_name(code)));
}

}  // namespace

TEST_CASE("fork: the child refuses the parent's context, a fresh one works, the parent goes on (fake plugin)") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  const int64_t shape[1] = {64};
  std::vector<double> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 3.0;
  Tensor t;
  REQUIRE_OK(braid_tensor_empty(c.ctx, 0, BRAID_FLOAT64, 1, shape, t.out()));
  REQUIRE_OK(braid_tensor_write_host(t.t, v.data(), v.size() * sizeof(double)));  // work pushed before fork

  check_child_result(run_forked(30, [&] { return child_checks(c.ctx, t.t, "newer_minor", /*cpu=*/false); }),
                     "the child");

  // The parent's context and tensor keep working.
  CHECK(to_host<double>(t.t, 64) == v);
  std::vector<double> w(64, 9.0);
  REQUIRE_OK(braid_tensor_write_host(t.t, w.data(), w.size() * sizeof(double)));
  CHECK(to_host<double>(t.t, 64) == w);
  CHECK_OK(braid_wait_all(c.ctx));
  CHECK(c.devices() == 1);
}

TEST_CASE("fork: cpu backend with TBB kernels in flight" * doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  Context c("cpu");
  REQUIRE_CREATED(c);
  braid_device dev = -1;
  REQUIRE_OK(braid_context_find_device(c.ctx, "cpu:0", &dev));
  // Elementwise work (parallel_for over the device's TBB arena, no OpenBLAS) still queued or running
  // when fork() happens: x <- x * 1 + 0 ... keeps every value at 1.5.
  const int64_t shape[1] = {1 << 21};
  const size_t n = size_t{1} << 21;
  Tensor a;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_FLOAT32, 1, shape, 1.5, a.out()));
  std::vector<Tensor> steps(32);
  braid_tensor prev = a.t;
  for (size_t i = 0; i < steps.size(); ++i) {
    REQUIRE_OK(braid_binary_scalar(i % 2 ? BRAID_BINARY_ADD : BRAID_BINARY_MUL, prev, i % 2 ? 0.0 : 1.0, 0,
                                   steps[i].out()));
    prev = steps[i].t;
  }

  check_child_result(run_forked(30, [&] { return child_checks(c.ctx, a.t, "cpu", /*cpu=*/true); }), "the child");

  // The parent finishes its work and keeps going.
  CHECK_OK(braid_wait_all(c.ctx));
  const auto last = to_host<float>(prev, n);
  CHECK(std::all_of(last.begin(), last.end(), [](float x) { return x == 1.5f; }));
  Tensor d;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_INT32, 1, shape, 11, d.out()));
  const auto ints = to_host<int32_t>(d.t, n);
  CHECK(std::all_of(ints.begin(), ints.end(), [](int32_t x) { return x == 11; }));
}

// KNOWN BUG (cpu backend + OpenBLAS 0.3.21 pthreads): OpenBLAS registers a pthread_atfork prepare
// handler (blas_thread_shutdown_) that tears its thread pool down; if a queue thread is inside a
// threaded GEMM at that moment, that GEMM spins forever in exec_blas_async and the PARENT's context
// never drains (braid_wait_all hangs). The child is fine. The scenario therefore runs in a driver
// process bounded by alarm(), so the test reports the hang instead of hanging. may_fail until the cpu
// backend quiesces its GEMMs across fork (e.g. its own pthread_atfork handlers, registered after
// OpenBLAS's so that they run first, holding off fork while a GEMM runs); then drop may_fail.
TEST_CASE("fork: cpu backend with an OpenBLAS GEMM in flight" * doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  const int code = run_forked(30, [] {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu";
    braid_context ctx = nullptr;
    if (braid_context_create(&o, &ctx) != BRAID_OK) return int{kDriverSetupFailed};
    const int64_t shape[2] = {512, 512};
    braid_tensor a = nullptr, b = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, shape, 1.5, &a) != BRAID_OK ||
        braid_full(ctx, 0, BRAID_FLOAT32, 2, shape, 2.0, &b) != BRAID_OK)
      return int{kDriverSetupFailed};
    // x <- (x @ b) / 1024 keeps every value at 1.5; 16 GEMMs keep OpenBLAS busy across the fork.
    std::vector<braid_tensor> keep;
    braid_tensor prev = a;
    for (int i = 0; i < 16; ++i) {
      braid_tensor p = nullptr, s = nullptr;
      if (braid_matmul(prev, b, 0, 0, &p) != BRAID_OK ||
          braid_binary_scalar(BRAID_BINARY_MUL, p, 1.0 / 1024.0, 0, &s) != BRAID_OK)
        return int{kDriverSetupFailed};
      keep.push_back(p);
      keep.push_back(s);
      prev = s;
    }
    const int child = run_forked(10, [&] { return child_checks(ctx, a, "cpu", /*cpu=*/true); });
    if (child == -SIGALRM) return int{kDriverChildHung};
    if (child != kChildOk) return int{kDriverChildFailed};
    if (braid_wait_all(ctx) != BRAID_OK) return int{kDriverWaitFailed};  // hangs with the bug above
    std::vector<float> last(512 * 512);
    if (braid_tensor_to_host(prev, last.data(), last.size() * sizeof(float)) != BRAID_OK) return int{kDriverWaitFailed};
    if (std::any_of(last.begin(), last.end(), [](float x) { return x != 1.5f; })) return int{kDriverValuesWrong};
    for (braid_tensor t : keep) braid_tensor_release(t);
    braid_tensor_release(a);
    braid_tensor_release(b);
    return braid_context_release(ctx) == BRAID_OK ? int{kChildOk} : int{kDriverWaitFailed};
  });
  if (code == -SIGALRM) {
    FAIL("the parent hung after fork() with an OpenBLAS GEMM in flight (OpenBLAS's atfork handler shut its "
         "thread pool down under a running GEMM); see the KNOWN BUG note above this test");
  }
  check_child_result(code, "the driver process");
}

}  // TEST_SUITE
