// Conformance at the edges of the number line: casts at and beyond the integer bounds, NaN, signed
// zeros, infinities and subnormals through the elementwise ops. The random-data cases of the other
// files stay inside each op's comfortable range and compare with an absolute floor (tolerance.h), so
// they cannot see a wrong sign of zero, a lost subnormal or a small relative error near 0; here every
// expectation is exact, or a relative bound in ulps, and each comes from the C library or from the
// conversion rules of backends/cpu/kernels/convert.h (which every backend follows).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "harness.h"

using harness::context;

namespace {

// Uploads values as a 1-D tensor of T's dtype.
template <class T>
braid::Tensor put(const harness::DeviceRef& dev, const std::vector<T>& v) {
  return braid::Tensor::from_vector(context(), dev.index, {static_cast<int64_t>(v.size())}, v);
}

// Bit equality, so -0 differs from +0; any NaN matches any NaN.
template <class T>
bool same(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    return std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(got) ==
           std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(want);
  } else {
    return got == want;
  }
}

template <class T>
std::string show(T v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<T>::max_digits10);
  s << v;
  return s.str();
}

// Checks got[i] == want[i] bit for bit, naming the input of each differing element.
template <class In, class Out>
void check_exact(const std::vector<In>& in, const std::vector<Out>& got, const std::vector<Out>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("input ", show(in[i]), ": expected ", show(want[i]), ", got ", show(got[i]));
    CHECK(same(got[i], want[i]));
  }
}

}  // namespace

TEST_CASE("special values: int64 -> float32 rounds once, negative values included") {
  // Negative values whose low word alone rounds up (the two halves converted separately gave 0 for
  // -1 and -2), values past 2^24 that need rounding (ties to even), and the int64 bounds.
  const std::vector<int64_t> x = {-1,
                                  -2,
                                  -672,
                                  -1031,
                                  1,
                                  16777217,   // 2^24 + 1: a tie, to even (2^24)
                                  -16777219,  // -(2^24 + 3): a tie, to even (-(2^24 + 4))
                                  (int64_t{1} << 40) + 1,
                                  -((int64_t{1} << 40) + 0x10001),
                                  4294967295,  // 2^32 - 1
                                  -4294967295,
                                  (int64_t{1} << 53) + 1,
                                  std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::min() + 1,
                                  0x7fffffc000000001};  // just above a float32 tie: rounds up to 2^63
  std::vector<float> want;
  for (int64_t v : x) want.push_back(static_cast<float>(v));  // one rounding, to nearest even
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      check_exact(x, braid::cast(put(dev, x), BRAID_FLOAT32).to_vector<float>(), want);
    });
  }
}

namespace {

// The CPU backend's float -> integer rule (backends/common/float_to_int.h, docs/ABI.md): truncation
// toward zero, saturated at the target's bounds, NaN -> 0. Written out here, not included, so that
// the test states the rule rather than reusing the code under test.
template <class I, class F>
I saturate(F x) {
  if (std::isnan(x)) return 0;
  if (x >= std::ldexp(F(1), std::numeric_limits<I>::digits)) return std::numeric_limits<I>::max();
  if (x <= -std::ldexp(F(1), std::numeric_limits<I>::digits)) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

template <class F>
std::vector<F> float_to_int_inputs() {
  const F inf = std::numeric_limits<F>::infinity(), nan = std::numeric_limits<F>::quiet_NaN();
  return {F(3e9),
          F(-3e9),
          F(1e15),
          F(-1e15),
          F(1e19),
          F(-1e19),
          nan,
          -nan,
          inf,
          -inf,
          F(2147483647.0),
          F(2147483648.0),
          F(-2147483648.0),
          F(-2147483904.0),
          F(4294967296.0),
          F(-4294967297.0),
          F(9.2233720368547758e18),
          F(-9.2233720368547758e18),
          F(-0.0),
          F(-2.75),
          F(2.75),
          F(1e-30),
          F(-123456789.5),
          F(1099511627776.75)};
}

template <class F, class I>
void check_float_to_int(const harness::DeviceRef& dev) {
  INFO("device ", dev.id, ", ", harness::dtype_name(braid::dtype_v<F>), " -> ", harness::dtype_name(braid::dtype_v<I>));
  const std::vector<F> x = float_to_int_inputs<F>();
  std::vector<I> want;
  for (F v : x) want.push_back(saturate<I>(v));
  check_exact(x, braid::cast(put(dev, x), braid::dtype_v<I>).template to_vector<I>(), want);
}

}  // namespace

TEST_CASE("special values: float -> integer casts saturate, NaN -> 0; fills refuse what the dtype cannot hold") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      check_float_to_int<float, int32_t>(dev);
      check_float_to_int<float, int64_t>(dev);
      check_float_to_int<double, int32_t>(dev);
      check_float_to_int<double, int64_t>(dev);
      // full() refuses a value its dtype cannot hold, as torch.full does (and as a scalar operand
      // outside the dtype is refused: below), and truncates a fractional one toward zero.
      INFO("device ", dev.id);
      const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
      const int64_t one = 3;
      const auto fill_status = [&](braid_dtype dtype, double v) {
        braid_tensor t = nullptr;
        const braid_status s = braid_full(context().get(), dev.index, dtype, 1, &one, v, &t);
        if (t != nullptr) braid_tensor_release(t);
        return s;
      };
      for (double v : {3e9, -3e9, 1e19, -1e19, nan, inf, -inf}) {
        INFO("value ", v);
        CHECK(fill_status(BRAID_INT32, v) == BRAID_ERR_INVALID_ARGUMENT);
        if (std::fabs(v) > 1e10 || std::isnan(v)) CHECK(fill_status(BRAID_INT64, v) == BRAID_ERR_INVALID_ARGUMENT);
      }
      CHECK(fill_status(BRAID_INT64, 9223372036854775808.0) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(fill_status(BRAID_UINT8, -1) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(fill_status(BRAID_UINT8, 256) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(fill_status(BRAID_FLOAT32, 1e39) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(fill_status(BRAID_FLOAT16, 70000) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(fill_status(BRAID_BFLOAT16, -3.4e38) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid::Tensor::full(context(), dev.index, BRAID_INT32, {3}, -7.9).to_vector<int32_t>() ==
            std::vector<int32_t>(3, -7));
      CHECK(braid::Tensor::full(context(), dev.index, BRAID_INT64, {3}, 3e9).to_vector<int64_t>() ==
            std::vector<int64_t>(3, 3000000000));
      CHECK(braid::Tensor::full(context(), dev.index, BRAID_UINT8, {3}, 255.5).to_vector<uint8_t>() ==
            std::vector<uint8_t>(3, 255));
      CHECK(std::isinf(braid::Tensor::full(context(), dev.index, BRAID_FLOAT32, {3}, -inf).to_vector<float>()[0]));
      CHECK(braid::Tensor::full(context(), dev.index, BRAID_FLOAT32, {3}, 3.4028234e38).to_vector<float>()[0] ==
            std::numeric_limits<float>::max());
    });
  }
}

namespace {

// got matches want: bit for bit when want is 0, infinite or NaN (so the sign of a zero counts), else
// within rel relative error.
template <class T>
bool close(T got, T want, double rel) {
  if (std::isnan(want) || std::isinf(want) || want == T(0)) return same(got, want);
  return std::fabs(double(got) - double(want)) <= rel * std::fabs(double(want));
}

template <class T>
struct PowCase {
  T a, b;
};

// C/IEEE pow at its special cases (C11 F.10.4.4) and for negative bases with integer exponents.
template <class T>
std::vector<PowCase<T>> pow_cases() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  return {{-2, 3},  {-2, 2},   {-2, -1},     {-2, -2},    {-0.5, -3},   {-1.5, 3},   {-3, 0.5},  {-8, T(1) / 3},
          {0, 0},   {-0.0, 0}, {nan, 0},     {inf, 0},    {-inf, -0.0}, {0, -2},     {-0.0, -1}, {-0.0, -2},
          {0, -1},  {-0.0, 3}, {0, 3},       {-0.0, 0.5}, {0, -inf},    {1, nan},    {1, inf},   {nan, 1},
          {2, nan}, {-1, inf}, {-1, -inf},   {0.5, inf},  {0.5, -inf},  {2, inf},    {2, -inf},  {inf, -1},
          {inf, 2}, {-inf, 3}, {-inf, 2},    {-inf, -3},  {-inf, -2},   {-inf, 0.5}, {1.5, 2},   {2, -1},
          {4, 0.5}, {3, -2},   {0.25, -0.5}, {-1, 1e10}};
}

template <class T>
void check_pow(const harness::DeviceRef& dev) {
  const double rel = tol::of(tol::Kind::transcend, braid::dtype_v<T>);
  const auto cases = pow_cases<T>();
  std::vector<T> a, b, want;
  for (const auto& c : cases) {
    a.push_back(c.a);
    b.push_back(c.b);
    want.push_back(std::pow(c.a, c.b));
  }
  const auto got = braid::pow(put(dev, a), put(dev, b)).template to_vector<T>();
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("pow(", show(a[i]), ", ", show(b[i]), "): expected ", show(want[i]), ", got ", show(got[i]));
    CHECK(close(got[i], want[i], rel));
  }
  // With a scalar on either side: x ** s and s ** x (the reverse form), every scalar of the cases.
  for (const auto& c : cases) {
    const T w = std::pow(c.a, c.b);
    const auto fwd =
        braid::binary(BRAID_BINARY_POW, put(dev, std::vector<T>{c.a}), double(c.b)).template to_vector<T>();
    CHECK_MESSAGE(close(fwd[0], w, rel), "tensor ", show(c.a), " ** scalar ", show(c.b), ": expected ", show(w),
                  ", got ", show(fwd[0]));
    const auto rev =
        braid::binary(BRAID_BINARY_POW, put(dev, std::vector<T>{c.b}), double(c.a), true).template to_vector<T>();
    CHECK_MESSAGE(close(rev[0], w, rel), "scalar ", show(c.a), " ** tensor ", show(c.b), ": expected ", show(w),
                  ", got ", show(rev[0]));
  }
}

}  // namespace

TEST_CASE("special values: pow follows C pow (negative bases, zeros, infinities, NaN)") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float32");
      check_pow<float>(dev);
    });
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float64");
      check_pow<double>(dev);
    });
  }
}

namespace {

// NumPy's divmod (npy_divmod), written from its definition: C's fmod, then the remainder moved to the
// divisor's sign and the quotient rounded toward -inf from what is left.
template <class T>
std::pair<T, T> numpy_divmod(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return {a / b, mod};
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1;
    }
  } else {
    mod = std::copysign(T(0), b);
  }
  if (div == 0) return {std::copysign(T(0), a / b), mod};
  T floored = std::floor(div);
  if (div - floored > T(0.5)) floored += 1;
  return {floored, mod};
}

// FLOOR_DIVIDE and MOD on every pair of values, as tensors and with a scalar on either side, bit for
// bit (-0 against +0 included) against NumPy's definition.
template <class T>
void check_divmod(const harness::DeviceRef& dev) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T tiny = std::numeric_limits<T>::denorm_min() * 5, big = std::numeric_limits<T>::max() / 3;
  const std::vector<T> values = {7,           -7,  5.5,  T(0.1), T(-0.1), 2,   -2,   T(1e30),
                                 T(16777217), big, tiny, 0,      -T(0),   inf, -inf, nan};
  std::vector<T> a, b;
  for (T x : values)
    for (T y : values) {
      a.push_back(x);
      b.push_back(y);
    }
  const auto ta = put(dev, a), tb = put(dev, b);
  const auto q = braid::binary(BRAID_BINARY_FLOOR_DIVIDE, ta, tb).template to_vector<T>();
  const auto r = braid::binary(BRAID_BINARY_MOD, ta, tb).template to_vector<T>();
  REQUIRE(q.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::pair<T, T> want = numpy_divmod(a[i], b[i]);  // (not a structured binding: clang 14 cannot
    const T wq = want.first, wr = want.second;              // capture one in CHECK_MESSAGE's lambda)
    CHECK_MESSAGE(same(q[i], wq), show(a[i]), " // ", show(b[i]), ": expected ", show(wq), ", got ", show(q[i]));
    CHECK_MESSAGE(same(r[i], wr), show(a[i]), " % ", show(b[i]), ": expected ", show(wr), ", got ", show(r[i]));
  }
  for (T s : {T(7), T(-0.1), inf}) {  // a scalar divisor, and a scalar dividend (the reverse form)
    const auto qs = braid::binary(BRAID_BINARY_FLOOR_DIVIDE, put(dev, values), double(s)).template to_vector<T>();
    const auto rs = braid::binary(BRAID_BINARY_MOD, put(dev, values), double(s), true).template to_vector<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      CHECK_MESSAGE(same(qs[i], numpy_divmod(values[i], s).first), show(values[i]), " // scalar ", show(s));
      CHECK_MESSAGE(same(rs[i], numpy_divmod(s, values[i]).second), "scalar ", show(s), " % ", show(values[i]));
    }
  }
}

}  // namespace

TEST_CASE("special values: floor_divide and mod are NumPy's divmod, signed zeros, infinities and NaN included") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float32");
      check_divmod<float>(dev);
    });
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float64");
      check_divmod<double>(dev);
    });
  }
}

namespace {

// unary(op) on values, each compared with the C library's fn in T (f32 / f64 overloads) within rel,
// bit for bit where the result is 0, infinite or NaN.
template <class T, class Fn>
void check_unary(const harness::DeviceRef& dev, braid_unary_op op, const std::vector<T>& x, Fn fn, double rel) {
  const auto got = braid::unary(op, put(dev, x)).template to_vector<T>();
  REQUIRE(got.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const T want = fn(x[i]);
    CHECK_MESSAGE(close(got[i], want, rel), "input ", show(x[i]), ": expected ", show(want), ", got ", show(got[i]));
  }
}

template <class T>
std::vector<T> tanh_inputs() {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = {0, 1e-30, 1e-6, 3e-4, 0.01, 0.1, 0.3, 0.5, 0.624, 0.626, 0.9, 1, 2, 5, 9, 9.1, 20, 400, inf};
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) x.push_back(-x[i]);  // tanh is odd: -0 -> -0
  x.push_back(std::numeric_limits<T>::quiet_NaN());
  return x;
}

}  // namespace

TEST_CASE("special values: tanh is accurate relative to its value near 0 and keeps the sign of zero") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float32");
      // A few ulp of the value itself, not of max(1, |value|): tanh(1e-6) must not be 1.013e-6.
      check_unary<float>(
          dev, BRAID_UNARY_TANH, tanh_inputs<float>(), [](float v) { return std::tanh(v); }, 4 * 0x1p-24);
    });
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float64");
      check_unary<double>(
          dev, BRAID_UNARY_TANH, tanh_inputs<double>(), [](double v) { return std::tanh(v); },
          tol::of(tol::Kind::transcend, BRAID_FLOAT64));
    });
  }
}

namespace {

// Results and inputs in the subnormal range: within rel of the C library, plus one subnormal step
// (a subnormal result has fewer significant bits, so one rounding is worth more than rel there).
template <class T, class Fn>
void check_subnormal(const harness::DeviceRef& dev, braid_unary_op op, const std::vector<T>& x, Fn fn, double rel) {
  const auto got = braid::unary(op, put(dev, x)).template to_vector<T>();
  REQUIRE(got.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const T want = fn(x[i]);
    const bool ok = std::isnan(want) || std::isinf(want) || want == T(0)
                        ? same(got[i], want)
                        : std::fabs(double(got[i]) - double(want)) <=
                              rel * std::fabs(double(want)) + double(std::numeric_limits<T>::denorm_min());
    CHECK_MESSAGE(ok, "input ", show(x[i]), ": expected ", show(want), ", got ", show(got[i]));
  }
}

}  // namespace

TEST_CASE("special values: exp gives and log takes subnormals") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float32");
      using L = std::numeric_limits<float>;
      const double rel = tol::of(tol::Kind::transcend, BRAID_FLOAT32);
      // exp(-87.34) is 2^-126, the smallest normal; exp(-103.98) is below half the smallest subnormal.
      const std::vector<float> e = {1,    -1,      -80,      -87,  -87.3f, -87.4f,         -88,   -90, -100,
                                    -103, -103.9f, -103.98f, -104, -200,   -L::infinity(), 88.7f, 89,  L::quiet_NaN()};
      check_subnormal<float>(
          dev, BRAID_UNARY_EXP, e, [](float v) { return std::exp(v); }, rel);
      const std::vector<float> l = {1e-40f,
                                    L::denorm_min(),
                                    1.1e-38f,
                                    std::nextafter(L::min(), 0.0f),
                                    L::min(),
                                    1e-30f,
                                    1,
                                    0,
                                    -0.0f,
                                    -1,
                                    -L::denorm_min(),
                                    L::infinity(),
                                    L::quiet_NaN()};
      check_subnormal<float>(
          dev, BRAID_UNARY_LOG, l, [](float v) { return std::log(v); }, rel);
    });
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float64");
      using L = std::numeric_limits<double>;
      const double rel = tol::of(tol::Kind::transcend, BRAID_FLOAT64);
      const std::vector<double> e = {1,    -700,   -708,   -708.5, -709,           -720,          -740,
                                     -745, -745.1, -745.2, -746,   -L::infinity(), L::quiet_NaN()};
      check_subnormal<double>(
          dev, BRAID_UNARY_EXP, e, [](double v) { return std::exp(v); }, rel);
      const std::vector<double> l = {
          1e-310,           L::denorm_min(), 2.2e-308,      std::nextafter(L::min(), 0.0), L::min(), 1, 0, -0.0, -1,
          -L::denorm_min(), L::infinity(),   L::quiet_NaN()};
      check_subnormal<double>(
          dev, BRAID_UNARY_LOG, l, [](double v) { return std::log(v); }, rel);
    });
  }
}

// A cast is either refused at the call (BRAID_ERR_UNSUPPORTED, the device has no kernel for it) or
// runs: an error first seen at the read is a cast the runtime accepted and the backend then failed.
// Not in harness::on_device, which would take that late UNSUPPORTED for a skip.
TEST_CASE("special values: float16 <-> bfloat16 casts run, or are refused at the call") {
  const double edges[] = {0.0,
                          -0.0,
                          1.0,
                          -2.5,
                          65504.0,
                          1e-5,
                          3.0e-8,
                          0.1,
                          1.0 + 0x1p-8,
                          1.0 + 0x1p-7 + 0x1p-8,
                          std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::quiet_NaN()};
  for (const auto& dev : harness::each_device()) {
    for (const auto& conversion :
         {std::pair{BRAID_FLOAT16, BRAID_BFLOAT16}, std::pair{BRAID_BFLOAT16, BRAID_FLOAT16}}) {
      const braid_dtype from = conversion.first, to = conversion.second;  // plain names: INFO captures them
      INFO("device ", dev.id, ", ", harness::dtype_name(from), " -> ", harness::dtype_name(to));
      ref::Array x({static_cast<int64_t>(std::size(edges))});
      for (size_t i = 0; i < std::size(edges); ++i) x.data[i] = ref::round_to(from, edges[i]);
      braid::Tensor y;
      try {
        y = braid::cast(harness::upload(dev.index, from, x), to);
      } catch (const braid::Error& e) {
        CHECK_MESSAGE(e.status() == BRAID_ERR_UNSUPPORTED, std::string(e.what()));
        CHECK_MESSAGE(dev.id.rfind("cpu:", 0) != 0,
                      "the CPU backend casts between every pair: ", std::string(e.what()));
        MESSAGE("skipped on ", dev.id, ": ", std::string(e.what()));
        continue;
      }
      ref::Array got;
      try {
        got = harness::download(y);
      } catch (const braid::Error& e) {
        FAIL_CHECK("accepted at the call, failed at the read: " << std::string(e.what()));
        continue;
      }
      // Through float32, which holds both exactly: one rounding to nearest even into the target.
      CHECK_CLOSE(got, ref::round_to(to, x), 0.0);
    }
  }
}

// Every ordered pair of dtypes a device holds casts (bool included), never accepted and failed at the read: a pair the
// backend has no kernel for (the Vulkan backend's float16/bfloat16 <-> integers, docs/VULKAN.md) goes
// through float64 or float32 (it was refused).
TEST_CASE("special values: a cast between any two dtypes a device holds runs") {
  const ref::Array x({6}, {0, 1, 2, 3, 100, 7});  // exact in every dtype
  for (const auto& dev : harness::each_device()) {
    for (int f = 0; f < BRAID_DTYPE_COUNT; ++f)
      for (int t = 0; t < BRAID_DTYPE_COUNT; ++t) {
        const auto from = static_cast<braid_dtype>(f), to = static_cast<braid_dtype>(t);
        INFO("device ", dev.id, ", ", harness::dtype_name(from), " -> ", harness::dtype_name(to));
        braid::Tensor src;
        try {
          src = harness::upload(dev.index, from, x);
        } catch (const braid::Error& e) {  // a device without the dtype at all (no 16-bit storage)
          CHECK_MESSAGE(e.status() == BRAID_ERR_UNSUPPORTED, std::string(e.what()));
          continue;
        }
        braid::Tensor y;
        try {
          y = braid::cast(src, to);
        } catch (const braid::Error& e) {
          FAIL_CHECK("refused: " << std::string(e.what()));
          continue;
        }
        ref::Array want = x;  // bool on either side holds 1 for each nonzero value
        if (from == BRAID_BOOL || to == BRAID_BOOL)
          for (double& v : want.data) v = v != 0.0 ? 1.0 : 0.0;
        try {
          CHECK_CLOSE(harness::download(y), want, 0.0);
        } catch (const braid::Error& e) {
          FAIL_CHECK("accepted at the call, failed at the read: " << std::string(e.what()));
        }
      }
  }
}

namespace {

// The status a braid:: call fails with (BRAID_OK when it does not).
template <class F>
braid_status status_of(F&& f) {
  try {
    f();
  } catch (const braid::Error& e) {
    return e.status();
  }
  return BRAID_OK;
}

}  // namespace

TEST_CASE(
    "special values: an integer tensor with an infinite scalar computes in float32; an unrepresentable one is "
    "refused") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const std::vector<int32_t> v = {0, 1, -1, 7};
      const braid::Tensor x = put(dev, v);
      // inf is no integer: the result is float32, as in NumPy and PyTorch (it was a saturated int32).
      const braid::Tensor plus = x + double(inf);
      CHECK(plus.dtype() == BRAID_FLOAT32);
      check_exact(v, plus.to_vector<float>(), std::vector<float>{inf, inf, inf, inf});
      const braid::Tensor times = x * -double(inf);
      check_exact(v, times.to_vector<float>(), std::vector<float>{std::nanf(""), -inf, inf, -inf});  // 0 * inf: NaN
      const braid::Tensor less = braid::binary(BRAID_BINARY_LESS, x, double(inf));
      CHECK(less.dtype() == BRAID_FLOAT32);
      check_exact(v, less.to_vector<float>(), std::vector<float>{1, 1, 1, 1});
      const braid::Tensor most = braid::maximum(x, -double(inf));
      check_exact(v, most.to_vector<float>(), std::vector<float>{0, 1, -1, 7});
      // A whole number outside the dtype was clamped (x == 2^31 held at 2^31 - 1): refused.
      CHECK(status_of([&] { (void)braid::binary(BRAID_BINARY_EQUAL, x, 2147483648.0); }) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(status_of([&] { (void)(x + 3e9); }) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(status_of([&] { (void)(x + -2147483649.0); }) == BRAID_ERR_INVALID_ARGUMENT);
      check_exact(v, (x + -2147483648.0).to_vector<int32_t>(),
                  std::vector<int32_t>{INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MIN + 7});  // -2^31 fits
      const std::vector<int64_t> w = {0, -5};
      const braid::Tensor y = put(dev, w);
      CHECK(status_of([&] { (void)(y + 9223372036854775808.0); }) == BRAID_ERR_INVALID_ARGUMENT);
      check_exact(w, (y + -9223372036854775808.0).to_vector<int64_t>(),
                  std::vector<int64_t>{INT64_MIN, INT64_MAX - 4});  // -5 - 2^63 wraps, as in PyTorch
    });
  }
}

TEST_CASE("special values: softmax cross-entropy of logits sharing a large offset does not cancel") {
  // log(sum exp(x - m)) - (x[label] - m): two equal logits give ln 2 at any offset (m + log(2) - x
  // gave 0.6934 at 1e4, 0.6875 at 1e6 and 0 at 1e8 in float32, and 0 at 1e17 in float64).
  const std::vector<int32_t> labels = {0};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (double offset : {1e4, 1e6, 1e8, 1e17, -1e17}) {
        INFO("device ", dev.id, ", float32, offset ", offset);
        const std::vector<float> f = {float(offset), float(offset)};
        const auto logits = braid::Tensor::from_vector(context(), dev.index, {1, 2}, f);
        const float loss = braid::softmax_cross_entropy(logits, put(dev, labels)).to_vector<float>()[0];
        CHECK(close(loss, std::log(2.0f), 1e-6));
      }
    });
    harness::on_device(dev, [&] {  // a device without float64 ends here
      for (double offset : {1e4, 1e8, 1e17, -1e17}) {
        INFO("device ", dev.id, ", float64, offset ", offset);
        const std::vector<double> d = {offset, offset};
        const auto logits = braid::Tensor::from_vector(context(), dev.index, {1, 2}, d);
        const double loss = braid::softmax_cross_entropy(logits, put(dev, labels)).to_vector<double>()[0];
        CHECK(close(loss, std::log(2.0), 1e-12));
      }
    });
  }
}

namespace {

template <class T>
void check_sign_and_ties(const harness::DeviceRef& dev) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const std::vector<T> x = {nan, T(-0.0), T(0.0), -inf, T(2.5), T(-1e-40)};
  // torch.sign: 0 for NaN and for either zero (NumPy keeps NaN; braid follows PyTorch, docs/OPS.md).
  check_exact(x, braid::sign(put(dev, x)).template to_vector<T>(), std::vector<T>{0, 0, 0, -1, 1, -1});
  // torch.maximum / minimum: a tie of -0 and +0 gives the first operand; NaN from either side wins.
  const std::vector<T> a = {T(-0.0), T(0.0), T(-0.0), T(0.0), nan, T(1)};
  const std::vector<T> b = {T(0.0), T(-0.0), T(-0.0), T(0.0), T(1), nan};
  check_exact(a, braid::maximum(put(dev, a), put(dev, b)).template to_vector<T>(),
              std::vector<T>{-0.0, 0.0, -0.0, 0.0, nan, nan});
  check_exact(a, braid::minimum(put(dev, a), put(dev, b)).template to_vector<T>(),
              std::vector<T>{-0.0, 0.0, -0.0, 0.0, nan, nan});
  // torch.amax / amin / max_pool2d over tied zeros: the first one (Vulkan's GLSL max/min picked either).
  for (const std::vector<T>& row : {std::vector<T>{T(-0.0), T(0.0)}, std::vector<T>{T(0.0), T(-0.0)},
                                    std::vector<T>{T(0.0), T(-0.0), T(-0.0), T(-0.0), T(-0.0), T(-0.0)}}) {
    const std::vector<T> first(1, row[0]);
    check_exact(first, braid::reduce(BRAID_REDUCE_MAX, put(dev, row)).template to_vector<T>(), first);
    check_exact(first, braid::reduce(BRAID_REDUCE_MIN, put(dev, row)).template to_vector<T>(), first);
    const auto image = braid::reshape(put(dev, row), {1, 1, 1, static_cast<int64_t>(row.size())});
    const braid::Pool2dOptions whole_row{BRAID_POOL_MAX, {1, static_cast<int32_t>(row.size())}};
    check_exact(first, braid::pool2d(image, whole_row).template to_vector<T>(), first);
  }
}

}  // namespace

TEST_CASE(
    "special values: sign of NaN and zeros, and maximum/minimum, amax/amin and max pooling of tied zeros, as PyTorch") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float32");
      check_sign_and_ties<float>(dev);
    });
    harness::on_device(dev, [&] {
      INFO("device ", dev.id, ", float64");
      check_sign_and_ties<double>(dev);
    });
  }
}
