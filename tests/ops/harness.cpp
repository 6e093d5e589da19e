#include "harness.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

namespace harness {

braid::Context& context() {
  static braid::Context ctx = [] {
    setenv("BRAID_CPU_DEVICES", "2", /*overwrite=*/0);
    return braid::Context();
  }();
  return ctx;
}

std::vector<DeviceRef> devices() {
  std::vector<DeviceRef> out;
  for (braid::Device d : context().devices()) out.push_back({d, context().device_info(d).id});
  return out;
}

std::vector<DeviceRef> each_device() {
  auto out = devices();
  if (out.empty()) MESSAGE("skipped: the context found no devices, so no case ran");
  return out;
}

// std::uniform_real_distribution differs between standard libraries; this does not.
ref::Array random_array(const ref::Shape& shape, double lo, double hi, braid_dtype dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  ref::Array a(shape);
  for (double& v : a.data) v = ref::round_to(dtype, lo + (hi - lo) * (gen() / 4294967296.0));
  return a;
}

ref::Array random_ints(const ref::Shape& shape, int lo, int hi, uint32_t seed) {
  std::mt19937 gen(seed);
  ref::Array a(shape);
  for (double& v : a.data) v = lo + static_cast<int>(gen() % static_cast<uint32_t>(hi - lo));
  return a;
}

ref::Array sample(const ref::Shape& shape, braid_dtype dtype, uint32_t seed) {
  switch (dtype) {
    case BRAID_UINT8: return random_ints(shape, 0, 255, seed);
    case BRAID_BOOL: return random_ints(shape, 0, 2, seed);
    case BRAID_INT32:
    case BRAID_INT64: return random_ints(shape, -100, 100, seed);
    default: return random_array(shape, -100, 100, dtype, seed);
  }
}

// ---- 16-bit float encodings (values already on the format's grid) -----------------------------------

static uint16_t encode_half(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  v = std::fabs(v);
  if (v == 0) return sign;
  if (std::isinf(v)) return sign | 0x7c00;
  if (std::isnan(v)) return 0x7e00;
  int e = 0;
  std::frexp(v, &e);
  const int E = e - 1;                                                  // v in [2^E, 2^(E+1))
  if (E < -14) return sign | static_cast<uint16_t>(std::ldexp(v, 24));  // subnormal: multiples of 2^-24
  const auto mant = static_cast<uint16_t>((std::ldexp(v, -E) - 1.0) * 1024.0);
  return sign | static_cast<uint16_t>((E + 15) << 10) | mant;
}

static double decode_half(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + mant, exp - 25);
}

static uint16_t encode_bf16(double v) {
  const auto f = static_cast<float>(v);  // exact: v is on the bfloat16 grid
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

static double decode_bf16(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ---- transfers ------------------------------------------------------------------------------------

template <class T, class F>
static std::vector<T> convert(const ref::Array& a, F f) {
  std::vector<T> out(a.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = f(a.data[i]);
  return out;
}

braid::Tensor upload(braid::Device d, braid_dtype dtype, const ref::Array& a) {
  auto& ctx = context();
  const auto put = [&](const auto& v) {
    return braid::Tensor::from_host(ctx, d, dtype, a.shape, std::as_bytes(std::span(v)));
  };
  switch (dtype) {
    case BRAID_FLOAT32: return put(convert<float>(a, [](double v) { return static_cast<float>(v); }));
    case BRAID_FLOAT64: return put(a.data);
    case BRAID_INT32: return put(convert<int32_t>(a, [](double v) { return static_cast<int32_t>(v); }));
    case BRAID_INT64: return put(convert<int64_t>(a, [](double v) { return static_cast<int64_t>(v); }));
    case BRAID_UINT8: return put(convert<uint8_t>(a, [](double v) { return static_cast<uint8_t>(v); }));
    case BRAID_FLOAT16: return put(convert<uint16_t>(a, encode_half));
    case BRAID_BFLOAT16: return put(convert<uint16_t>(a, encode_bf16));
    case BRAID_BOOL: return put(convert<uint8_t>(a, [](double v) { return static_cast<uint8_t>(v != 0.0); }));
    default: throw std::invalid_argument("upload: bad dtype");
  }
}

template <class T, class F>
static ref::Array fetch(const braid::Tensor& t, F f) {
  std::vector<T> raw(static_cast<size_t>(t.numel()));
  t.to_host(std::as_writable_bytes(std::span(raw)));
  ref::Array out(t.shape());
  for (size_t i = 0; i < raw.size(); ++i) out.data[i] = f(raw[i]);
  return out;
}

ref::Array download(const braid::Tensor& t) {
  const auto same = [](auto v) { return static_cast<double>(v); };
  switch (t.dtype()) {
    case BRAID_FLOAT32: return fetch<float>(t, same);
    case BRAID_FLOAT64: return fetch<double>(t, same);
    case BRAID_INT32: return fetch<int32_t>(t, same);
    case BRAID_INT64: return fetch<int64_t>(t, same);
    case BRAID_UINT8: return fetch<uint8_t>(t, same);
    case BRAID_FLOAT16: return fetch<uint16_t>(t, decode_half);
    case BRAID_BFLOAT16: return fetch<uint16_t>(t, decode_bf16);
    case BRAID_BOOL: return fetch<uint8_t>(t, same);  // the bytes themselves: a test sees a 2 if one was stored
    default: throw std::invalid_argument("download: bad dtype");
  }
}

std::vector<int64_t> to_int64(const ref::Array& a) {
  std::vector<int64_t> out(a.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(a.data[i]);
  return out;
}

// ---- comparison -----------------------------------------------------------------------------------

static std::string index_string(const ref::Shape& shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = static_cast<int64_t>(flat) % shape[i];
    flat /= static_cast<size_t>(shape[i]);
  }
  return ref::to_string(idx);
}

static bool matches(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

Comparison compare(const ref::Array& got, const ref::Array& want, double tol) {
  if (got.shape != want.shape)
    return {false, "shape: expected " + ref::to_string(want.shape) + ", got " + ref::to_string(got.shape)};
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (matches(got.data[i], want.data[i], tol)) continue;
    if (bad++ == 0) first = i;
    worst = std::max(worst, std::fabs(got.data[i] - want.data[i]) / std::max(1.0, std::fabs(want.data[i])));
  }
  if (bad == 0) return {true, ""};
  std::ostringstream s;
  s.precision(17);
  s << bad << " of " << want.data.size() << " elements differ (tol " << tol << ", worst scaled error " << worst
    << "); first at " << index_string(want.shape, first) << ": expected " << want.data[first] << ", got "
    << got.data[first];
  return {false, s.str()};
}

}  // namespace harness
