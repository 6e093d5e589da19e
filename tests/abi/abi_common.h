// Helpers shared by the ABI test files (abi_*_test.cpp, one executable: braid-test-abi): status
// checks that print braid_last_error(), scoped environment variables, contexts restricted to the fake
// plugins of tests/abi/plugins, a probe of those plugins' call counters, and an owned tensor.
#pragma once

#include <dlfcn.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid.h"
#include "braid_backend.h"
#include "fake_backend.h"  // counter indices of the fake plugins

#ifndef BRAID_TEST_HAVE_CPU
#define BRAID_TEST_HAVE_CPU 0
#endif

namespace abi_test {

inline const std::string kPluginDir = BRAID_TEST_PLUGIN_DIR;

// doctest 2.4 streams a `const char*` into a message as a pointer value: wrap C strings with str().
inline std::string str(const char* s) { return s ? s : "(null)"; }
constexpr bool kHaveCpu = BRAID_TEST_HAVE_CPU != 0;
#if defined(BRAID_SANITIZER_THREAD)
// TSan refuses to start threads in the child of a multi-threaded fork (die_after_fork); the cpu
// backend starts queue threads, so its fork cases are skipped there.
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif

#define CHECK_OK(expr)                                                                                              \
  do {                                                                                                              \
    braid_status st_ = (expr);                                                                                      \
    CHECK_MESSAGE(st_ == BRAID_OK, #expr " -> " << str(braid_status_name(st_)) << ": " << str(braid_last_error())); \
  } while (0)
#define REQUIRE_OK(expr)                                                                                              \
  do {                                                                                                                \
    braid_status st_ = (expr);                                                                                        \
    REQUIRE_MESSAGE(st_ == BRAID_OK, #expr " -> " << str(braid_status_name(st_)) << ": " << str(braid_last_error())); \
  } while (0)
// expr must fail with `status`, and braid_last_error() must begin with "<function>: " and mention `needle`.
#define CHECK_FAILS(expr, status, function, needle)                                                  \
  do {                                                                                               \
    braid_status st_ = (expr);                                                                       \
    std::string msg_ = braid_last_error();                                                           \
    CHECK_MESSAGE(st_ == (status), #expr " -> " << str(braid_status_name(st_)) << " (want "          \
                                                << str(braid_status_name(status)) << "): " << msg_); \
    CHECK_MESSAGE(msg_.rfind(std::string(function) + ": ", 0) == 0,                                  \
                  "'" << msg_ << "' should name " << std::string(function));                         \
    CHECK_MESSAGE(msg_.find(needle) != std::string::npos,                                            \
                  "'" << msg_ << "' should mention '" << std::string(needle) << "'");                \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                 \
  CHECK_MESSAGE(std::string(hay).find(needle) != std::string::npos, \
                "'" << std::string(hay) << "' should contain '" << std::string(needle) << "'")

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::string plugin_file(const std::string& name) { return kPluginDir + "/libbraid-backend-" + name + ".so"; }

// Sets (value != NULL) or unsets an environment variable for a scope, restoring it afterwards.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvVar() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
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

#define REQUIRE_CREATED(c) \
  REQUIRE_MESSAGE((c).status == BRAID_OK, str(braid_status_name((c).status)) << ": " << (c).error)

struct BackendInfo {
  std::string name, path, reason;
  uint32_t abi_major = 0, abi_minor = 0;
  int32_t loaded = -1, device_count = -1;
};

inline std::vector<BackendInfo> backends_of(braid_context ctx) {
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
inline BackendInfo backend_named(braid_context ctx, const std::string& name) {
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

}  // namespace abi_test
