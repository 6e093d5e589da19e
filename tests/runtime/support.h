// Small helpers for the runtime tests, over the C API directly (these tests exercise the ABI).
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "braid.h"

#define BRAID_CHECK_OK(expr)                                                       \
  do {                                                                             \
    braid_status st_ = (expr);                                                     \
    INFO(#expr << " -> " << braid_status_name(st_) << ": " << braid_last_error()); \
    REQUIRE(st_ == BRAID_OK);                                                      \
  } while (0)

namespace test {

// Owns a context created with the given options (and BRAID_CPU_DEVICES, set only for this call).
struct Ctx {
  braid_context ctx = nullptr;
  explicit Ctx(int cpu_devices = 1, braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT) {
    std::string old = std::getenv("BRAID_CPU_DEVICES") ? std::getenv("BRAID_CPU_DEVICES") : "";
    setenv("BRAID_CPU_DEVICES", std::to_string(cpu_devices).c_str(), 1);
    if (!opts.backends) opts.backends = "cpu";
    braid_status st = braid_context_create(&opts, &ctx);
    if (old.empty())
      unsetenv("BRAID_CPU_DEVICES");
    else
      setenv("BRAID_CPU_DEVICES", old.c_str(), 1);
    INFO(braid_last_error());
    REQUIRE(st == BRAID_OK);
  }
  ~Ctx() {
    if (ctx) braid_context_release(ctx);
  }
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  int devices() const {
    int32_t n = 0;
    braid_context_device_count(ctx, &n);
    return n;
  }
};

// Owns one tensor reference.
struct T {
  braid_tensor t = nullptr;
  T() = default;
  explicit T(braid_tensor x) : t(x) {}
  T(T&& o) noexcept : t(o.t) { o.t = nullptr; }
  T& operator=(T&& o) noexcept {
    if (this != &o) {
      if (t) braid_tensor_release(t);
      t = o.t;
      o.t = nullptr;
    }
    return *this;
  }
  ~T() {
    if (t) braid_tensor_release(t);
  }
  braid_tensor* out() {
    if (t) braid_tensor_release(t);
    t = nullptr;
    return &t;
  }
};

inline T from_vector(braid_context ctx, braid_device dev, const std::vector<double>& v,
                     std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  T t;
  BRAID_CHECK_OK(braid_tensor_from_host(ctx, dev, BRAID_FLOAT64, static_cast<int32_t>(shape.size()), shape.data(),
                                        v.data(), v.size() * sizeof(double), t.out()));
  return t;
}

inline std::vector<double> to_vector(const T& t) {
  int64_t n = 0;
  braid_tensor_numel(t.t, &n);
  std::vector<double> v(static_cast<size_t>(n));
  BRAID_CHECK_OK(braid_tensor_to_host(t.t, v.data(), v.size() * sizeof(double)));
  return v;
}

inline T full(braid_context ctx, braid_device dev, braid_dtype dtype, std::vector<int64_t> shape, double value) {
  T t;
  BRAID_CHECK_OK(braid_full(ctx, dev, dtype, static_cast<int32_t>(shape.size()), shape.data(), value, t.out()));
  return t;
}

// How much the process's peak resident memory grows over a stretch of a test, in bytes. The peak
// (VmHWM) is reset to the current size first (/proc/self/clear_refs, Linux 4.0), so an earlier test's
// larger peak does not hide this one's. Where the reset is not allowed, ok() is false.
class PeakGrowth {
 public:
  PeakGrowth() {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5";
    reset.flush();
    ok_ = static_cast<bool>(reset);
    start_kb_ = read_kb("VmHWM:");
  }
  bool ok() const { return ok_; }
  uint64_t bytes() const {
    const long now = read_kb("VmHWM:");
    return now > start_kb_ ? static_cast<uint64_t>(now - start_kb_) * 1024 / kResidentPerByte : 0;
  }

  // Under TSan every application page touched also makes its shadow resident (four bytes of shadow per
  // byte on x86-64), so the process grows about five times what the code under test allocates; that is
  // divided out, so a bound means the same in every build (a TSan run measured 90 MB for a header
  // whose Release peak is under 18 MB).
#if defined(BRAID_SANITIZER_THREAD)
  static constexpr uint64_t kResidentPerByte = 5;
#else
  static constexpr uint64_t kResidentPerByte = 1;
#endif

 private:
  static long read_kb(const std::string& key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
    return 0;
  }
  bool ok_ = false;
  long start_kb_ = 0;
};

}  // namespace test
