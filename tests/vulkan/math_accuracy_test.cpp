// vulkan:0's log and pow against the host's C library (logf, powf, log, pow), in ulps. The float32
// kernels used GLSL's built-in log and pow: log was 13% off at 1 - 2^-23 (lavapipe), pow(FLT_MAX, 1)
// overflowed, pow(100, -20) flushed to 0, pow(1e-45, -1) stayed finite and pow(10, 10) was not 1e10;
// float64 pow lost ~100 ulps to exp(b log a) rounding b log a. The shaders' functions are in
// shaders/real.glsl; the float32 ones use float arithmetic only (shaderFloat64 is optional).
//
// Skipped (visibly) without a Vulkan device; the float64 cases also without shaderFloat64.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>
#include "braid.h"

namespace {

struct Context {
  braid_context ctx = nullptr;
  braid_device vk = -1;
  bool float64 = false;
  Context() {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu,vulkan";
    REQUIRE(braid_context_create(&o, &ctx) == BRAID_OK);
    if (braid_context_find_device(ctx, "vulkan:0", &vk) != BRAID_OK) {
      vk = -1;
      return;
    }
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(braid_context_device_info(ctx, vk, &info) == BRAID_OK);
    const std::string json = info.properties_json ? info.properties_json : "";
    float64 = json.find("\"float64\":true") != std::string::npos;
  }
  ~Context() { braid_context_release(ctx); }
};

template <class F>
constexpr braid_dtype dtype_of() {
  return sizeof(F) == 4 ? BRAID_FLOAT32 : BRAID_FLOAT64;
}

template <class F>
braid_tensor upload(const Context& c, const std::vector<F>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  braid_tensor t = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.vk, dtype_of<F>(), 1, &n, v.data(), v.size() * sizeof(F), &t) == BRAID_OK);
  return t;
}

// Reads t back and releases it.
template <class F>
std::vector<F> download(braid_tensor t, size_t n) {
  std::vector<F> out(n);
  REQUIRE(braid_tensor_to_host(t, out.data(), n * sizeof(F)) == BRAID_OK);
  braid_tensor_release(t);
  return out;
}

template <class F>
std::vector<F> vk_log(const Context& c, const std::vector<F>& x) {
  braid_tensor in = upload(c, x), out = nullptr;
  REQUIRE(braid_unary(BRAID_UNARY_LOG, in, &out) == BRAID_OK);
  braid_tensor_release(in);
  return download<F>(out, x.size());
}

template <class F>
std::vector<F> vk_pow(const Context& c, const std::vector<F>& a, const std::vector<F>& b) {
  braid_tensor ta = upload(c, a), tb = upload(c, b), out = nullptr;
  REQUIRE(braid_binary(BRAID_BINARY_POW, ta, tb, &out) == BRAID_OK);
  braid_tensor_release(ta);
  braid_tensor_release(tb);
  return download<F>(out, a.size());
}

// x^s (reverse = 0) or s^x (reverse = 1) through braid_binary_scalar.
std::vector<float> vk_pow_scalar(const Context& c, const std::vector<float>& x, double s, int reverse) {
  braid_tensor in = upload(c, x), out = nullptr;
  REQUIRE(braid_binary_scalar(BRAID_BINARY_POW, in, s, reverse, &out) == BRAID_OK);
  braid_tensor_release(in);
  return download<float>(out, x.size());
}

// Distance in representable values (0 between two NaNs, and between equal infinities); a NaN against
// a number counts as far away.
template <class F>
int64_t ulps(F got, F want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : INT64_MAX;
  using I = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  auto ordered = [](F v) {
    I i;
    std::memcpy(&i, &v, sizeof v);
    return i < 0 ? -static_cast<int64_t>(i & std::numeric_limits<I>::max()) : static_cast<int64_t>(i);
  };
  const int64_t a = ordered(got), b = ordered(want);
  return a > b ? a - b : b - a;
}

// A value with every digit it needs (doctest prints 6).
template <class F>
std::string show(F v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", sizeof(F) == 4 ? 9 : 17, static_cast<double>(v));
  return buf;
}

// Checks every result within max_ulps of the host's and reports the worst one.
template <class F, class Host>
void check_unary(const std::vector<F>& x, const std::vector<F>& got, Host host, int64_t max_ulps, const char* what) {
  REQUIRE(got.size() == x.size());
  int64_t worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t d = ulps(got[i], host(x[i]));
    if (d > worst) worst = d, at = i;
  }
  INFO(what, ": worst ", worst, " ulps at x = ", show(x[at]), " (got ", show(got[at]), ", want ", show(host(x[at])),
       ")");
  CHECK(worst <= max_ulps);
}

template <class F, class Host>
void check_binary(const std::vector<F>& a, const std::vector<F>& b, const std::vector<F>& got, Host host,
                  int64_t max_ulps, const char* what) {
  REQUIRE(got.size() == a.size());
  int64_t worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t d = ulps(got[i], host(a[i], b[i]));
    if (d > worst) worst = d, at = i;
  }
  INFO(what, ": worst ", worst, " ulps at ", show(a[at]), " ^ ", show(b[at]), " (got ", show(got[at]), ", want ",
       show(host(a[at], b[at])), ")");
  CHECK(worst <= max_ulps);
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
double from_bits64(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

// Positive finite float32 inputs for log: the reported values, every float in [1 - 2^-9, 1 + 2^-8]
// (where the built-in cancelled), subnormals, the ends of the range and random bit patterns.
std::vector<float> log_inputs() {
  std::vector<float> x = {0.95081919f,
                          0.999f,
                          0.9999f,
                          0.99999988f,
                          1.0f,
                          1.00000012f,
                          2.0f,
                          0.5f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          1e-40f,
                          1e-45f,
                          0.70710677f,
                          1.4142135f};
  for (float v = 1.0f - 1.0f / 512; v <= 1.0f + 1.0f / 256; v = std::nextafter(v, 2.0f)) x.push_back(v);
  for (uint32_t u = 1; u < 0x00800000u; u += 997) x.push_back(from_bits(u));
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(1, 0x7f7fffffu);
  for (int i = 0; i < 200000; ++i) x.push_back(from_bits(bits(rng)));
  return x;
}

}  // namespace

TEST_CASE("vulkan math: float32 log is within 2 ulps of logf, near 1 and for subnormals too") {
  Context c;
  if (c.vk < 0) {
    MESSAGE("skipped: no Vulkan device");
    return;
  }
  const std::vector<float> x = log_inputs();
  check_unary(
      x, vk_log(c, x), [](float v) { return std::log(v); }, 2, "log");
  // Zeros, infinities, NaN and negatives as C's log.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, nan, -1.0f, -1e-45f};
  check_unary(
      special, vk_log(c, special), [](float v) { return std::log(v); }, 0, "log specials");
}

TEST_CASE("vulkan math: float32 pow overflows, underflows and rounds as powf") {
  Context c;
  if (c.vk < 0) {
    MESSAGE("skipped: no Vulkan device");
    return;
  }
  auto powf_host = [](float a, float b) { return std::pow(a, b); };
  // The reported cases, each exactly as powf gives them (inf, a subnormal, 1e10, FLT_MAX).
  const float max = std::numeric_limits<float>::max();
  const std::vector<float> a = {max, 1e-45f, 100.0f, 10.0f, 46341.0f, 2.5f, 2.0f, 2.0f, 2.0f, 0.5f, 3.0f};
  const std::vector<float> b = {1.0f, -1.0f, -20.0f, 10.0f, 3.0f, 88.72f, 127.0f, 128.0f, -149.0f, 149.0f, -95.0f};
  check_binary(a, b, vk_pow(c, a, b), powf_host, 0, "pow reported");

  // Random bases (bit patterns over the whole range, near 1, and moderate) with exponents that put
  // log2 of the result anywhere in [-155, 130]: overflow, the subnormals and underflow to 0 included.
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits(1, 0x7f7fffffu);
  std::uniform_real_distribution<double> y(-155.0, 130.0), near1(-1e-3, 1e-3), wide(-3.0, 3.0);
  std::vector<float> ra, rb;
  for (int i = 0; i < 150000; ++i) {
    float base = i % 3 == 0   ? from_bits(bits(rng))
                 : i % 3 == 1 ? static_cast<float>(1.0 + near1(rng))
                              : static_cast<float>(std::exp(wide(rng)));
    const float e = static_cast<float>(y(rng) / std::log2(static_cast<double>(base)));
    if (base == 1.0f || !std::isfinite(e) || e == 0.0f) continue;
    ra.push_back(base);
    rb.push_back(e);
  }
  check_binary(ra, rb, vk_pow(c, ra, rb), powf_host, 2, "pow random");

  // Integer powers of integers: exact wherever the result is a float (and within 2 ulps elsewhere).
  std::vector<float> ia, ib;
  for (int base = 1; base <= 120; ++base)
    for (int e = -24; e <= 24; ++e) ia.push_back(static_cast<float>(base)), ib.push_back(static_cast<float>(e));
  const std::vector<float> got = vk_pow(c, ia, ib);
  check_binary(ia, ib, got, powf_host, 2, "pow integers");
  int64_t inexact = 0;
  for (size_t i = 0; i < ia.size(); ++i) {
    const double exact = std::pow(static_cast<double>(ia[i]), static_cast<double>(ib[i]));
    if (ib[i] >= 0 && exact < 9007199254740992.0 && static_cast<double>(static_cast<float>(exact)) == exact)
      inexact += got[i] != static_cast<float>(exact);
  }
  CHECK(inexact == 0);

  // The scalar form: x^s and s^x.
  const std::vector<float> x = {0.5f, 0.999f, 1.5f, 10.0f, 1e-30f, 77.7f, 1e-45f, 3e38f};
  check_unary(
      x, vk_pow_scalar(c, x, 10.0, 0), [](float v) { return std::pow(v, 10.0f); }, 2, "pow scalar x^10");
  check_unary(
      x, vk_pow_scalar(c, x, 0.3, 1), [](float v) { return std::pow(0.3f, v); }, 2, "pow scalar 0.3^x");
}

TEST_CASE("vulkan math: float64 log and pow are within a few ulps of log and pow") {
  Context c;
  if (c.vk < 0 || !c.float64) {
    MESSAGE("skipped: no Vulkan device with shaderFloat64");
    return;
  }
  std::mt19937_64 rng(13);
  std::uniform_int_distribution<uint64_t> bits(1, 0x7fefffffffffffffull);
  std::uniform_real_distribution<double> y(-1080.0, 1030.0), near1(-1e-6, 1e-6), wide(-700.0, 700.0);
  std::vector<double> x = {0.999999, 1.0 - 1.0 / 4503599627370496.0, 4.9e-324, 1e-310, 1.7976931348623157e308};
  for (int i = 0; i < 20000; ++i) x.push_back(i % 2 ? from_bits64(bits(rng)) : 1.0 + near1(rng));
  check_unary(
      x, vk_log(c, x), [](double v) { return std::log(v); }, 4, "log f64");

  std::vector<double> a = {0.5, 710.0, 10.0, 2.0, 2.0, 0.5}, b = {709.7, 100.0, 22.0, 1023.0, -1074.0, 1074.5};
  for (int i = 0; i < 20000; ++i) {
    const double base = i % 3 == 0 ? from_bits64(bits(rng)) : i % 3 == 1 ? 1.0 + near1(rng) : std::exp(wide(rng));
    const double e = y(rng) / std::log2(base);
    if (base == 1.0 || !std::isfinite(e) || e == 0.0) continue;
    a.push_back(base);
    b.push_back(e);
  }
  check_binary(
      a, b, vk_pow(c, a, b), [](double p, double q) { return std::pow(p, q); }, 4, "pow f64");
}
