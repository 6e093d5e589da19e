// braid.hpp — header-only C++20 RAII wrapper over the C API in braid.h.
//
// Every C call goes through check(), which turns a failed braid_status into a braid::Error carrying
// the status and braid_last_error(). Handles are owned by value types: copying a Tensor or Context
// retains the handle, moving transfers it, destruction releases it. Nothing here adds semantics to the
// C API; read braid.h for what each op does. Arrays cross the boundary as std::span (List below also
// binds to a braced list, so `reshape(x, {2, -1})` works).
#ifndef BRAID_HPP_
#define BRAID_HPP_

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "braid.h"

namespace braid {

// ---- errors ---------------------------------------------------------------------------------------

class Error : public std::runtime_error {
 public:
  Error(braid_status status, const std::string& message)
      : std::runtime_error(std::string(braid_status_name(status)) + ": " + message), status_(status) {}
  braid_status status() const noexcept { return status_; }

 private:
  braid_status status_;
};

// Throws braid::Error for any status but BRAID_OK; the message is read at once because it is only
// valid until the next failing call on this thread.
inline void check(braid_status status) {
  if (status != BRAID_OK) throw Error(status, braid_last_error());
}

// The library's release and ABI versions, e.g. "0.1.0 (ABI 1.3)" (braid_version_string).
inline std::string version_string() { return braid_version_string(); }

// ---- element types --------------------------------------------------------------------------------

template <class T>
struct dtype_of;  // undefined for types braid does not store
template <>
struct dtype_of<float> : std::integral_constant<braid_dtype, BRAID_FLOAT32> {};
template <>
struct dtype_of<double> : std::integral_constant<braid_dtype, BRAID_FLOAT64> {};
template <>
struct dtype_of<int32_t> : std::integral_constant<braid_dtype, BRAID_INT32> {};
template <>
struct dtype_of<int64_t> : std::integral_constant<braid_dtype, BRAID_INT64> {};
template <>
struct dtype_of<uint8_t> : std::integral_constant<braid_dtype, BRAID_UINT8> {};
static_assert(sizeof(bool) == 1, "BRAID_BOOL is one byte per element");
template <>
struct dtype_of<bool> : std::integral_constant<braid_dtype, BRAID_BOOL> {};

template <class T>
inline constexpr braid_dtype dtype_v = dtype_of<T>::value;

template <class T>
concept Element = requires {
  dtype_of<T>::value;
};

// A read-only array argument: a std::span that also binds to a braced list ({2, 3}). Like any span
// it does not own; a braced list lives until the end of the full expression, which covers the call.
template <class T>
class List : public std::span<const T> {
 public:
  using std::span<const T>::span;
  List() = default;
  List(std::span<const T> s) : std::span<const T>(s) {}
  List(const std::vector<T>& v) : std::span<const T>(v) {}
  List(std::initializer_list<T> l) : std::span<const T>(l.begin(), l.size()) {}
};

using Device = braid_device;
using Shape = std::vector<int64_t>;

// ---- context --------------------------------------------------------------------------------------

class Context {
 public:
  // Default options (BRAID_* environment variables apply).
  Context() { check(braid_context_create(nullptr, &h_)); }
  explicit Context(const braid_context_options& options) { check(braid_context_create(&options, &h_)); }
  Context(const Context& o) : h_(o.h_) {
    if (h_) check(braid_context_retain(h_));
  }
  Context(Context&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Context& operator=(Context o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Context() {
    if (h_) braid_context_release(h_);
  }

  braid_context get() const noexcept { return h_; }

  int32_t device_count() const {
    int32_t n = 0;
    check(braid_context_device_count(h_, &n));
    return n;
  }
  std::vector<Device> devices() const {
    std::vector<Device> out(static_cast<size_t>(device_count()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Device>(i);
    return out;
  }
  Device find_device(const std::string& name) const {
    Device d = 0;
    check(braid_context_find_device(h_, name.c_str(), &d));
    return d;
  }
  // Strings in the result are owned by the context.
  braid_device_info device_info(Device d) const {
    braid_device_info info{};
    info.struct_size = sizeof info;
    check(braid_context_device_info(h_, d, &info));
    return info;
  }
  int32_t backend_count() const {
    int32_t n = 0;
    check(braid_context_backend_count(h_, &n));
    return n;
  }
  braid_backend_info backend_info(int32_t index) const {
    braid_backend_info info{};
    info.struct_size = sizeof info;
    check(braid_context_backend_info(h_, index, &info));
    return info;
  }

  void wait_all() const { check(braid_wait_all(h_)); }
  void set_seed(uint64_t seed) const { check(braid_context_set_seed(h_, seed)); }

  // What the device reaches, measured on the first call (braid_device_measure; ABI 1.4).
  braid_device_perf measure(Device d) const {
    braid_device_perf p{};
    p.struct_size = sizeof p;
    check(braid_device_measure(h_, d, &p));
    return p;
  }
  braid_memory_stats memory_stats(Device d) const {
    braid_memory_stats s{};
    s.struct_size = sizeof s;
    check(braid_memory_stats_get(h_, d, &s));
    return s;
  }
  void empty_cache(Device d) const { check(braid_memory_empty_cache(h_, d)); }
  void reset_peak(Device d) const { check(braid_memory_reset_peak(h_, d)); }

  void profiler_start() const { check(braid_profiler_start(h_)); }
  void profiler_stop(const std::string& path) const { check(braid_profiler_stop(h_, path.c_str())); }

 private:
  braid_context h_ = nullptr;
};

// ---- tensor ---------------------------------------------------------------------------------------

class Tensor {
 public:
  Tensor() = default;  // a null tensor (e.g. "no bias")
  // Takes over a reference the caller owns (an out-parameter of a C call).
  static Tensor adopt(braid_tensor h) noexcept {
    Tensor t;
    t.h_ = h;
    return t;
  }
  Tensor(const Tensor& o) : h_(o.h_) {
    if (h_) check(braid_tensor_retain(h_));
  }
  Tensor(Tensor&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Tensor& operator=(Tensor o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Tensor() {
    if (h_) braid_tensor_release(h_);
  }

  braid_tensor get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

  int32_t ndim() const {
    int32_t n = 0;
    check(braid_tensor_ndim(h_, &n));
    return n;
  }
  Shape shape() const {
    std::array<int64_t, BRAID_MAX_DIMS> dims{};
    check(braid_tensor_shape(h_, dims.data()));
    return Shape(dims.begin(), dims.begin() + ndim());
  }
  braid_dtype dtype() const {
    braid_dtype d{};
    check(braid_tensor_dtype(h_, &d));
    return d;
  }
  Device device() const {
    Device d = 0;
    check(braid_tensor_device(h_, &d));
    return d;
  }
  int64_t numel() const {
    int64_t n = 0;
    check(braid_tensor_numel(h_, &n));
    return n;
  }

  // Waits for the last writer; throws its error (BRAID_ERR_KERNEL, ...) if it failed.
  void wait_to_read() const { check(braid_tensor_wait_to_read(h_)); }
  void to_host(std::span<std::byte> bytes) const { check(braid_tensor_to_host(h_, bytes.data(), bytes.size())); }
  void write_host(std::span<const std::byte> bytes) const {
    check(braid_tensor_write_host(h_, bytes.data(), bytes.size()));
  }

  // Waits and copies the contents out; T must be the tensor's element type.
  template <Element T>
  std::vector<T> to_vector() const {
    if (dtype() != dtype_v<T>)
      throw Error(BRAID_ERR_DTYPE, std::string("to_vector: tensor is ") + braid_dtype_name(dtype()) + ", requested " +
                                       braid_dtype_name(dtype_v<T>));
    std::vector<T> out(static_cast<size_t>(numel()));
    to_host(std::as_writable_bytes(std::span(out)));
    return out;
  }
  template <std::ranges::contiguous_range R>
  requires Element<std::ranges::range_value_t<R>>
  void write(const R& data) const {
    if (dtype() != dtype_v<std::ranges::range_value_t<R>>)
      throw Error(BRAID_ERR_DTYPE, "write: element type does not match the tensor");
    write_host(std::as_bytes(std::span(std::ranges::data(data), std::ranges::size(data))));
  }

  // ---- creation ----
  static Tensor empty(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape) {
    braid_tensor h = nullptr;
    check(braid_tensor_empty(ctx.get(), d, dtype, ndim_of(shape), shape.data(), &h));
    return adopt(h);
  }
  static Tensor from_host(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape,
                          std::span<const std::byte> bytes) {
    braid_tensor h = nullptr;
    check(braid_tensor_from_host(ctx.get(), d, dtype, ndim_of(shape), shape.data(), bytes.data(), bytes.size(), &h));
    return adopt(h);
  }
  // The element type comes from the range (std::vector<float> makes a float32 tensor).
  template <std::ranges::contiguous_range R>
  requires Element<std::ranges::range_value_t<R>>
  static Tensor from_vector(const Context& ctx, Device d, List<int64_t> shape, const R& data) {
    using T = std::ranges::range_value_t<R>;
    return from_host(ctx, d, dtype_v<T>, shape,
                     std::as_bytes(std::span(std::ranges::data(data), std::ranges::size(data))));
  }
  static Tensor full(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape, double value) {
    braid_tensor h = nullptr;
    check(braid_full(ctx.get(), d, dtype, ndim_of(shape), shape.data(), value, &h));
    return adopt(h);
  }
  static Tensor zeros(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape) {
    return full(ctx, d, dtype, shape, 0.0);
  }
  static Tensor ones(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape) {
    return full(ctx, d, dtype, shape, 1.0);
  }
  static Tensor arange(const Context& ctx, Device d, braid_dtype dtype, double start, double stop, double step = 1.0) {
    braid_tensor h = nullptr;
    check(braid_arange(ctx.get(), d, dtype, start, stop, step, &h));
    return adopt(h);
  }
  static Tensor random_uniform(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape, double low = 0.0,
                               double high = 1.0) {
    braid_tensor h = nullptr;
    check(braid_random_uniform(ctx.get(), d, dtype, ndim_of(shape), shape.data(), low, high, &h));
    return adopt(h);
  }
  static Tensor random_normal(const Context& ctx, Device d, braid_dtype dtype, List<int64_t> shape, double mean = 0.0,
                              double stddev = 1.0) {
    braid_tensor h = nullptr;
    check(braid_random_normal(ctx.get(), d, dtype, ndim_of(shape), shape.data(), mean, stddev, &h));
    return adopt(h);
  }

  // Copies to another device (the same device makes a clone).
  Tensor copy_to(Device d) const {
    braid_tensor h = nullptr;
    check(braid_copy(h_, d, &h));
    return adopt(h);
  }

 private:
  static int32_t ndim_of(List<int64_t> shape) { return static_cast<int32_t>(shape.size()); }
  braid_tensor h_ = nullptr;
};

// ---- op helpers -----------------------------------------------------------------------------------

namespace detail {
// Runs a C op with one output (the last parameter) and wraps the result.
template <class F, class... Args>
Tensor call(F f, Args... args) {
  braid_tensor h = nullptr;
  check(f(args..., &h));
  return Tensor::adopt(h);
}
}  // namespace detail

// ---- elementwise ----------------------------------------------------------------------------------

inline Tensor unary(braid_unary_op op, const Tensor& x) { return detail::call(braid_unary, op, x.get()); }
inline Tensor neg(const Tensor& x) { return unary(BRAID_UNARY_NEG, x); }
inline Tensor abs(const Tensor& x) { return unary(BRAID_UNARY_ABS, x); }
inline Tensor exp(const Tensor& x) { return unary(BRAID_UNARY_EXP, x); }
inline Tensor log(const Tensor& x) { return unary(BRAID_UNARY_LOG, x); }
inline Tensor sqrt(const Tensor& x) { return unary(BRAID_UNARY_SQRT, x); }
inline Tensor relu(const Tensor& x) { return unary(BRAID_UNARY_RELU, x); }
inline Tensor sigmoid(const Tensor& x) { return unary(BRAID_UNARY_SIGMOID, x); }
inline Tensor tanh(const Tensor& x) { return unary(BRAID_UNARY_TANH, x); }
inline Tensor square(const Tensor& x) { return unary(BRAID_UNARY_SQUARE, x); }
inline Tensor sign(const Tensor& x) { return unary(BRAID_UNARY_SIGN, x); }

inline Tensor binary(braid_binary_op op, const Tensor& a, const Tensor& b) {
  return detail::call(braid_binary, op, a.get(), b.get());
}
// x op s, or s op x when reverse is true.
inline Tensor binary(braid_binary_op op, const Tensor& x, double s, bool reverse = false) {
  return detail::call(braid_binary_scalar, op, x.get(), s, int32_t{reverse});
}
inline Tensor add(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_ADD, a, b); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_SUB, a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_MUL, a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_DIV, a, b); }
inline Tensor pow(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_POW, a, b); }
inline Tensor pow(const Tensor& a, double b) { return binary(BRAID_BINARY_POW, a, b); }
inline Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_MAXIMUM, a, b); }
inline Tensor maximum(const Tensor& a, double b) { return binary(BRAID_BINARY_MAXIMUM, a, b); }
inline Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_MINIMUM, a, b); }
inline Tensor minimum(const Tensor& a, double b) { return binary(BRAID_BINARY_MINIMUM, a, b); }
inline Tensor equal(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_EQUAL, a, b); }
inline Tensor less(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_LESS, a, b); }
inline Tensor greater(const Tensor& a, const Tensor& b) { return binary(BRAID_BINARY_GREATER, a, b); }
// Comparisons with bool results (braid_compare): a op b, and x op s.
inline Tensor compare(braid_compare_op op, const Tensor& a, const Tensor& b) {
  return detail::call(braid_compare, op, a.get(), b.get());
}
inline Tensor compare(braid_compare_op op, const Tensor& x, double s) {
  return detail::call(braid_compare_scalar, op, x.get(), s);
}
// cond ? a : b, element by element (torch.where).
inline Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return detail::call(braid_where, cond.get(), a.get(), b.get());
}
inline Tensor take(const Tensor& x, const Tensor& indices, int32_t axis) {
  return detail::call(braid_take, x.get(), indices.get(), axis);
}

inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return binary(BRAID_BINARY_ADD, a, s); }
inline Tensor operator-(const Tensor& a, double s) { return binary(BRAID_BINARY_SUB, a, s); }
inline Tensor operator*(const Tensor& a, double s) { return binary(BRAID_BINARY_MUL, a, s); }
inline Tensor operator/(const Tensor& a, double s) { return binary(BRAID_BINARY_DIV, a, s); }
inline Tensor operator+(double s, const Tensor& a) { return binary(BRAID_BINARY_ADD, a, s, true); }
inline Tensor operator-(double s, const Tensor& a) { return binary(BRAID_BINARY_SUB, a, s, true); }
inline Tensor operator*(double s, const Tensor& a) { return binary(BRAID_BINARY_MUL, a, s, true); }
inline Tensor operator/(double s, const Tensor& a) { return binary(BRAID_BINARY_DIV, a, s, true); }

// ---- reductions -----------------------------------------------------------------------------------

// Empty axes reduce over all axes; negative axes count from the end.
inline Tensor reduce(braid_reduce_op op, const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return detail::call(braid_reduce, op, x.get(), static_cast<int32_t>(axes.size()), axes.data(), int32_t{keepdims});
}
inline Tensor sum(const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return reduce(BRAID_REDUCE_SUM, x, axes, keepdims);
}
inline Tensor mean(const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return reduce(BRAID_REDUCE_MEAN, x, axes, keepdims);
}
inline Tensor max(const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return reduce(BRAID_REDUCE_MAX, x, axes, keepdims);
}
inline Tensor min(const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return reduce(BRAID_REDUCE_MIN, x, axes, keepdims);
}
inline Tensor norm(const Tensor& x, List<int32_t> axes = {}, bool keepdims = false) {
  return reduce(BRAID_REDUCE_NORM, x, axes, keepdims);
}
inline Tensor argmax(const Tensor& x, int32_t axis, bool keepdims = false) {
  return detail::call(braid_argmax, x.get(), axis, int32_t{keepdims});
}

// ---- linear algebra and layout --------------------------------------------------------------------

inline Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false) {
  return detail::call(braid_matmul, a.get(), b.get(), int32_t{transpose_a}, int32_t{transpose_b});
}
inline Tensor reshape(const Tensor& x, List<int64_t> shape) {
  return detail::call(braid_reshape, x.get(), static_cast<int32_t>(shape.size()), shape.data());
}
// The elements offset .. offset + numel(shape) - 1 of x, sharing x's memory (braid_view).
inline Tensor view(const Tensor& x, int64_t offset, List<int64_t> shape) {
  return detail::call(braid_view, x.get(), offset, static_cast<int32_t>(shape.size()), shape.data());
}
// begin/end/step have one entry per axis; an empty step means 1 everywhere.
inline Tensor slice(const Tensor& x, List<int64_t> begin, List<int64_t> end, List<int64_t> step = {}) {
  return detail::call(braid_slice, x.get(), begin.data(), end.data(), step.empty() ? nullptr : step.data());
}
inline Tensor transpose(const Tensor& x, List<int32_t> perm) {
  return detail::call(braid_transpose, x.get(), perm.data());
}
inline Tensor concat(List<Tensor> xs, int32_t axis) {
  std::vector<braid_tensor> handles;
  handles.reserve(xs.size());
  for (const Tensor& x : xs) handles.push_back(x.get());
  return detail::call(braid_concat, static_cast<int32_t>(handles.size()), handles.data(), axis);
}
inline Tensor copy_to(const Tensor& x, Device d) { return x.copy_to(d); }
inline Tensor cast(const Tensor& x, braid_dtype dtype) { return detail::call(braid_cast, x.get(), dtype); }
inline void copy_into(const Tensor& src, const Tensor& dst) { check(braid_copy_into(src.get(), dst.get())); }

// ---- neural network -------------------------------------------------------------------------------

struct Conv2dOptions {
  std::array<int32_t, 2> stride{1, 1};   // h, w
  std::array<int32_t, 2> padding{0, 0};  // h, w
};
// bias may be a null Tensor.
inline Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const Conv2dOptions& o = {}) {
  braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
  p.stride[0] = o.stride[0], p.stride[1] = o.stride[1];
  p.padding[0] = o.padding[0], p.padding[1] = o.padding[1];
  return detail::call(braid_conv2d, x.get(), w.get(), bias.get(), static_cast<const braid_conv2d_params*>(&p));
}

struct Pool2dOptions {
  braid_pool_kind kind = BRAID_POOL_MAX;
  std::array<int32_t, 2> kernel{2, 2};
  std::array<int32_t, 2> stride{0, 0};  // 0: equal to kernel
  std::array<int32_t, 2> padding{0, 0};
  bool global = false;  // pool all of H,W
};
inline Tensor pool2d(const Tensor& x, const Pool2dOptions& o) {
  braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
  p.kind = o.kind;
  for (int i = 0; i < 2; ++i) p.kernel[i] = o.kernel[i], p.stride[i] = o.stride[i], p.padding[i] = o.padding[i];
  p.global = o.global ? 1 : 0;
  return detail::call(braid_pool2d, x.get(), static_cast<const braid_pool2d_params*>(&p));
}

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool training = true;
};
struct BatchNormResult {
  Tensor y;
  Tensor save_mean;    // batch mean (training) or running mean (inference)
  Tensor save_invstd;  // 1/sqrt(var + eps) of the statistics used
};
// In training running_mean/running_var are updated in place.
inline BatchNormResult batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                                  const Tensor& running_var, const BatchNormOptions& o = {}) {
  braid_batch_norm_params p = BRAID_BATCH_NORM_PARAMS_INIT;
  p.eps = o.eps, p.momentum = o.momentum, p.training = o.training ? 1 : 0;
  braid_tensor y = nullptr, m = nullptr, s = nullptr;
  check(braid_batch_norm(x.get(), gamma.get(), beta.get(), running_mean.get(), running_var.get(), &p, &y, &m, &s));
  return {Tensor::adopt(y), Tensor::adopt(m), Tensor::adopt(s)};
}

inline Tensor softmax(const Tensor& x, int32_t axis = -1) { return detail::call(braid_softmax, x.get(), axis, 0); }
inline Tensor log_softmax(const Tensor& x, int32_t axis = -1) { return detail::call(braid_softmax, x.get(), axis, 1); }
inline Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
  return detail::call(braid_softmax_cross_entropy, logits.get(), labels.get());
}

struct DropoutResult {
  Tensor y;
  Tensor mask;  // 0 or 1, x's dtype
};
inline DropoutResult dropout(const Tensor& x, double p) {
  braid_tensor y = nullptr, mask = nullptr;
  check(braid_dropout(x.get(), p, &y, &mask));
  return {Tensor::adopt(y), Tensor::adopt(mask)};
}

// ---- optimizer updates (in place) -----------------------------------------------------------------

inline void sgd_update(const Tensor& w, const Tensor& g, double lr, double weight_decay = 0.0) {
  check(braid_sgd_update(w.get(), g.get(), lr, weight_decay));
}
inline void sgd_momentum_update(const Tensor& w, const Tensor& g, const Tensor& mom, double lr, double momentum,
                                double weight_decay = 0.0) {
  check(braid_sgd_momentum_update(w.get(), g.get(), mom.get(), lr, momentum, weight_decay));
}
struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weight_decay = 0.0;
  int64_t step = 1;  // 1-based, for bias correction
};
inline void adam_update(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v, const AdamOptions& o) {
  braid_adam_params p = BRAID_ADAM_PARAMS_INIT;
  p.lr = o.lr, p.beta1 = o.beta1, p.beta2 = o.beta2, p.epsilon = o.epsilon, p.weight_decay = o.weight_decay;
  p.step = o.step;
  check(braid_adam_update(w.get(), g.get(), m.get(), v.get(), &p));
}

// ---- data: datasets and mini-batch iterators -----------------------------------------------------

// An IDX dataset (Fashion-MNIST / MNIST) held in host memory. Copies retain, moves transfer.
class Dataset {
 public:
  Dataset() = default;
  // dir empty: $BRAID_DATA_DIR, else /usr/share/datasets/fashion-mnist.
  Dataset(const Context& ctx, braid_dataset_split split, const std::string& name = "fashion-mnist",
          const std::string& dir = {}) {
    braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
    o.name = name.c_str();
    o.dir = dir.empty() ? nullptr : dir.c_str();
    o.split = split;
    check(braid_dataset_open(ctx.get(), &o, &h_));
  }
  Dataset(const Context& ctx, const braid_dataset_options& options) {
    check(braid_dataset_open(ctx.get(), &options, &h_));
  }
  Dataset(const Dataset& o) : h_(o.h_) {
    if (h_) check(braid_dataset_retain(h_));
  }
  Dataset(Dataset&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Dataset& operator=(Dataset o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Dataset() {
    if (h_) braid_dataset_release(h_);
  }

  braid_dataset get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

  int64_t size() const {
    int64_t n = 0;
    check(braid_dataset_size(h_, &n));
    return n;
  }
  // Shape of one image (1, 28, 28).
  Shape image_shape() const {
    std::array<int64_t, BRAID_MAX_DIMS> dims{};
    int32_t nd = 0;
    check(braid_dataset_image_shape(h_, &nd, dims.data()));
    return Shape(dims.begin(), dims.begin() + nd);
  }

 private:
  braid_dataset h_ = nullptr;
};

struct BatchIteratorOptions {
  int64_t batch_size = 256;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  Device device = 0;
  int32_t prefetch = 2;
  // This process's part of each epoch (braid_batch_iterator_options, "ABI 1.10"): typically the process
  // group's size and rank.
  int32_t num_parts = 1;
  int32_t part_index = 0;
};

struct Batch {
  Tensor images;  // float32 [B, 1, 28, 28] in [0, 1]
  Tensor labels;  // int32 [B]
  // False at the end of an epoch (both tensors null).
  explicit operator bool() const noexcept { return static_cast<bool>(images); }
};

// A shuffling mini-batch iterator (not thread-safe: use from one thread). Typical loop:
//   for (braid::Batch b; (b = it.next());) { ... }   // one epoch; the next call starts the next
class BatchIterator {
 public:
  BatchIterator() = default;
  BatchIterator(const Dataset& ds, const BatchIteratorOptions& o = {}) {
    braid_batch_iterator_options c = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
    c.batch_size = o.batch_size;
    c.shuffle = o.shuffle ? 1 : 0;
    c.seed = o.seed;
    c.drop_last = o.drop_last ? 1 : 0;
    c.device = o.device;
    c.prefetch = o.prefetch;
    c.num_parts = o.num_parts;
    c.part_index = o.part_index;
    check(braid_batch_iterator_create(ds.get(), &c, &h_));
  }
  BatchIterator(const BatchIterator& o) : h_(o.h_) {
    if (h_) check(braid_batch_iterator_retain(h_));
  }
  BatchIterator(BatchIterator&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  BatchIterator& operator=(BatchIterator o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~BatchIterator() {
    if (h_) braid_batch_iterator_release(h_);
  }

  braid_batch_iterator get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

  // The next batch; an empty Batch marks the end of the epoch.
  Batch next() const {
    braid_tensor images = nullptr, labels = nullptr;
    check(braid_batch_iterator_next(h_, &images, &labels));
    return {Tensor::adopt(images), Tensor::adopt(labels)};
  }
  int64_t batches() const {
    int64_t n = 0;
    check(braid_batch_iterator_batches(h_, &n));
    return n;
  }

 private:
  braid_batch_iterator h_ = nullptr;
};

// ---- autograd -------------------------------------------------------------------------------------

// Attaches a zero gradient buffer (a leaf); BRAID_GRAD_ADD accumulates over backwards.
inline void attach_grad(const Tensor& t, braid_grad_req req = BRAID_GRAD_WRITE) {
  check(braid_tensor_attach_grad(t.get(), req));
}
inline Tensor grad(const Tensor& t) { return detail::call(braid_tensor_grad, t.get()); }
// Back-propagates from one head (a scalar, or with a head gradient of its shape).
inline void backward(const Tensor& head, const Tensor& head_grad = {}, bool retain_graph = false) {
  braid_tensor h = head.get(), g = head_grad.get();
  check(braid_backward(1, &h, head_grad ? &g : nullptr, retain_graph ? 1 : 0));
}
inline void backward(List<Tensor> heads, List<Tensor> head_grads = {}, bool retain_graph = false) {
  std::vector<braid_tensor> hs, gs;
  for (const Tensor& t : heads) hs.push_back(t.get());
  for (const Tensor& t : head_grads) gs.push_back(t.get());
  if (!gs.empty() && gs.size() != hs.size())
    throw Error(BRAID_ERR_INVALID_ARGUMENT, "backward: one head gradient per head");
  check(braid_backward(static_cast<int32_t>(hs.size()), hs.data(), gs.empty() ? nullptr : gs.data(),
                       retain_graph ? 1 : 0));
}

// Records on the calling thread for its lifetime (restores the previous setting), or, with
// record = false, a no-grad section.
class AutogradScope {
 public:
  explicit AutogradScope(const Context& ctx, bool record = true) : ctx_(ctx.get()) {
    check(braid_autograd_set_recording(ctx_, record ? 1 : 0, &prev_));
  }
  ~AutogradScope() { braid_autograd_set_recording(ctx_, prev_, nullptr); }
  AutogradScope(const AutogradScope&) = delete;
  AutogradScope& operator=(const AutogradScope&) = delete;

 private:
  braid_context ctx_;
  int32_t prev_ = 0;
};
inline bool is_recording(const Context& ctx) {
  int32_t on = 0;
  check(braid_autograd_is_recording(ctx.get(), &on));
  return on != 0;
}

// Automatic mixed precision on the calling thread for its lifetime (restores the previous setting):
// BRAID_BFLOAT16 or BRAID_FLOAT16, or BRAID_FLOAT32 for a full-precision section (braid_autocast_set).
class Autocast {
 public:
  explicit Autocast(const Context& ctx, braid_dtype dtype = BRAID_BFLOAT16) : ctx_(ctx.get()) {
    check(braid_autocast_set(ctx_, dtype, &prev_));
  }
  ~Autocast() { braid_autocast_set(ctx_, prev_, nullptr); }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  braid_context ctx_;
  braid_dtype prev_ = BRAID_FLOAT32;
};

// ---- parallel (ABI 1.2): several devices -----------------------------------------------------------

namespace detail {
inline std::vector<braid_tensor> handles(std::span<const Tensor> ts) {
  std::vector<braid_tensor> hs;
  for (const Tensor& t : ts) hs.push_back(t.get());
  return hs;
}
inline std::vector<Tensor> adopt_all(const std::vector<braid_tensor>& hs) {
  std::vector<Tensor> ts;
  for (braid_tensor h : hs) ts.push_back(Tensor::adopt(h));
  return ts;
}
}  // namespace detail

// Sizes of the parts of `total` rows over count devices (weights empty: even).
inline std::vector<int64_t> split_sizes(int64_t total, int32_t count, List<double> weights = {}) {
  // The C function reads `count` weights and writes `count` sizes: a shorter list, or a count the
  // vector cannot take, is refused here rather than read past.
  if (!weights.empty() && weights.size() != static_cast<size_t>(count < 0 ? 0 : count))
    throw Error(BRAID_ERR_INVALID_ARGUMENT, "split_sizes: one weight per part, or none");
  std::vector<int64_t> sizes(static_cast<size_t>(count > 0 ? count : 0));
  check(braid_split_sizes(total, count, weights.empty() ? nullptr : weights.data(), sizes.data()));
  return sizes;
}
// x split along axis 0 over devices (even, or by weights), one part per device: Gluon's split_and_load.
inline std::vector<Tensor> split_and_load(const Tensor& x, List<Device> devices, List<double> weights = {}) {
  if (!weights.empty() && weights.size() != devices.size())
    throw Error(BRAID_ERR_INVALID_ARGUMENT, "split_and_load: one weight per device, or none");
  std::vector<braid_tensor> outs(devices.size());
  check(braid_split_and_load(x.get(), static_cast<int32_t>(devices.size()), devices.data(),
                             weights.empty() ? nullptr : weights.data(), outs.data()));
  return detail::adopt_all(outs);
}
// A copy of x on each device.
inline std::vector<Tensor> replicate(const Tensor& x, List<Device> devices) {
  std::vector<braid_tensor> outs(devices.size());
  check(braid_replicate(x.get(), static_cast<int32_t>(devices.size()), devices.data(), outs.data()));
  return detail::adopt_all(outs);
}
// In place over same-shape tensors on several devices.
inline void allreduce(List<Tensor> ts, braid_collective_op op = BRAID_COLLECTIVE_SUM,
                      braid_allreduce_algorithm algorithm = BRAID_ALLREDUCE_AUTO) {
  const braid_collective_options o{sizeof(braid_collective_options), op, algorithm};
  const auto hs = detail::handles(ts);
  check(braid_allreduce(static_cast<int32_t>(hs.size()), hs.data(), &o));
}
inline void broadcast(List<Tensor> ts, int32_t root = 0) {
  const auto hs = detail::handles(ts);
  check(braid_broadcast(static_cast<int32_t>(hs.size()), hs.data(), root));
}
inline void reduce_to(List<Tensor> ts, int32_t root = 0, braid_collective_op op = BRAID_COLLECTIVE_SUM) {
  const braid_collective_options o{sizeof(braid_collective_options), op, BRAID_ALLREDUCE_AUTO};
  const auto hs = detail::handles(ts);
  check(braid_reduce_to(static_cast<int32_t>(hs.size()), hs.data(), root, &o));
}
inline std::vector<Tensor> all_gather(List<Tensor> ts) {
  const auto hs = detail::handles(ts);
  std::vector<braid_tensor> outs(hs.size());
  check(braid_all_gather(static_cast<int32_t>(hs.size()), hs.data(), outs.data()));
  return detail::adopt_all(outs);
}
inline std::vector<Tensor> reduce_scatter(List<Tensor> ts, braid_collective_op op = BRAID_COLLECTIVE_SUM) {
  const braid_collective_options o{sizeof(braid_collective_options), op, BRAID_ALLREDUCE_AUTO};
  const auto hs = detail::handles(ts);
  std::vector<braid_tensor> outs(hs.size());
  check(braid_reduce_scatter(static_cast<int32_t>(hs.size()), hs.data(), &o, outs.data()));
  return detail::adopt_all(outs);
}

// MXNet's KVStore ("local" or "device").
class KVStore {
 public:
  explicit KVStore(const Context& ctx, const char* type = "local") {
    check(braid_kvstore_create(ctx.get(), type, &h_));
  }
  KVStore(const KVStore& o) : h_(o.h_) { check(braid_kvstore_retain(h_)); }
  KVStore& operator=(const KVStore&) = delete;
  ~KVStore() { braid_kvstore_release(h_); }
  braid_kvstore get() const noexcept { return h_; }
  std::string type() const {
    const char* t = nullptr;
    check(braid_kvstore_type(h_, &t));
    return t;
  }
  void init(int64_t key, const Tensor& value) const { check(braid_kvstore_init(h_, key, value.get())); }
  void push(int64_t key, List<Tensor> values) const {
    const auto hs = detail::handles(values);
    check(braid_kvstore_push(h_, key, static_cast<int32_t>(hs.size()), hs.data()));
  }
  void pull(int64_t key, List<Tensor> outs) const {
    const auto hs = detail::handles(outs);
    check(braid_kvstore_pull(h_, key, static_cast<int32_t>(hs.size()), hs.data()));
  }
  void pushpull(int64_t key, List<Tensor> values, List<Tensor> outs) const {
    const auto hv = detail::handles(values), ho = detail::handles(outs);
    if (hv.size() != ho.size()) throw Error(BRAID_ERR_INVALID_ARGUMENT, "pushpull: one out per value");
    check(braid_kvstore_pushpull(h_, key, static_cast<int32_t>(hv.size()), hv.data(), ho.data()));
  }
  // One value or out, as MXNet's kv.push(3, a) and kv.pull(3, out=a). Templates, so that a braced
  // list ({}, {a}) binds only to the List overloads above.
  template <std::same_as<Tensor> T>
  void push(int64_t key, const T& value) const {
    push(key, List<Tensor>(&value, 1));
  }
  template <std::same_as<Tensor> T>
  void pull(int64_t key, const T& out) const {
    pull(key, List<Tensor>(&out, 1));
  }
  template <std::same_as<Tensor> T>
  void pushpull(int64_t key, const T& value, const T& out) const {
    pushpull(key, List<Tensor>(&value, 1), List<Tensor>(&out, 1));
  }
  void set_optimizer(const braid_optimizer_params& p) const { check(braid_kvstore_set_optimizer(h_, &p)); }
  // This worker's rank and the job's worker and server counts (rank 0 of 1 and 0 servers for a store
  // of one process).
  braid_kvstore_info info() const {
    braid_kvstore_info i{sizeof(braid_kvstore_info), 0, 0, 0};
    check(braid_kvstore_get_info(h_, &i));
    return i;
  }
  void barrier() const { check(braid_kvstore_barrier(h_)); }

 private:
  braid_kvstore h_ = nullptr;
};

// In a KVStore job's server process: serves the keys until every worker is done (braid.h,
// braid_kvstore_run_server).
inline void run_kvstore_server(const Context& ctx) { check(braid_kvstore_run_server(ctx.get())); }

// Gluon's Trainer over replicas: replicas[r] holds replica r's parameters, in the same order on every
// replica (each with a gradient attached).
class Trainer {
 public:
  Trainer(const std::vector<std::vector<Tensor>>& replicas, const braid_trainer_options& options) {
    if (replicas.empty() || replicas[0].empty()) throw Error(BRAID_ERR_INVALID_ARGUMENT, "Trainer: no parameters");
    std::vector<braid_tensor> hs;
    for (const auto& r : replicas) {
      if (r.size() != replicas[0].size()) throw Error(BRAID_ERR_INVALID_ARGUMENT, "Trainer: replicas differ in size");
      for (const Tensor& t : r) hs.push_back(t.get());
    }
    check(braid_trainer_create(static_cast<int32_t>(replicas.size()), static_cast<int32_t>(replicas[0].size()),
                               hs.data(), &options, &h_));
  }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  ~Trainer() { braid_trainer_release(h_); }
  braid_trainer get() const noexcept { return h_; }
  void step(double batch_size) const { check(braid_trainer_step(h_, batch_size)); }
  // The optimizer's state to and from a file (braid_trainer_save_states / load_states).
  void save_states(const std::string& path) const { check(braid_trainer_save_states(h_, path.c_str())); }
  void load_states(const std::string& path) const { check(braid_trainer_load_states(h_, path.c_str())); }
  void allreduce_grads() const { check(braid_trainer_allreduce_grads(h_)); }
  void update(double batch_size) const { check(braid_trainer_update(h_, batch_size)); }
  void set_learning_rate(double lr) const { check(braid_trainer_set_learning_rate(h_, lr)); }
  double learning_rate() const {
    double lr = 0;
    check(braid_trainer_learning_rate(h_, &lr));
    return lr;
  }

 private:
  braid_trainer h_ = nullptr;
};

// ---- checkpoints (ABI 1.4): safetensors files ------------------------------------------------------

// Writes the named tensors to path (atomically); see braid_save_safetensors.
inline void save_safetensors(const std::string& path, std::span<const std::pair<std::string, Tensor>> named) {
  std::vector<const char*> names;
  std::vector<braid_tensor> hs;
  for (const auto& [name, t] : named) names.push_back(name.c_str()), hs.push_back(t.get());
  check(braid_save_safetensors(path.c_str(), static_cast<int32_t>(hs.size()), names.data(), hs.data()));
}
// The names of a file's tensors, in data order.
inline std::vector<std::string> safetensors_names(const std::string& path) {
  size_t size = 0;
  check(braid_safetensors_names(path.c_str(), nullptr, 0, &size));
  std::string buf(size, '\0');
  check(braid_safetensors_names(path.c_str(), buf.data(), buf.size(), &size));
  std::vector<std::string> names;
  for (size_t at = 0; at < buf.size(); at = buf.find('\0', at) + 1) names.emplace_back(buf.c_str() + at);
  return names;
}
// Loads the named tensors onto device d (all of the file's when names is empty).
inline std::vector<Tensor> load_safetensors(const Context& ctx, Device d, const std::string& path,
                                            std::vector<std::string> names = {}) {
  if (names.empty()) names = safetensors_names(path);
  std::vector<const char*> ps;
  for (const std::string& n : names) ps.push_back(n.c_str());
  std::vector<braid_tensor> outs(names.size());
  check(braid_load_safetensors(ctx.get(), d, path.c_str(), static_cast<int32_t>(ps.size()), ps.data(), outs.data()));
  return detail::adopt_all(outs);
}

// ---- graph mode (ABI 1.5) -------------------------------------------------------------------------

// A traced graph (braid_graph): trace with Graph::trace, optimise, run, save and load.
class Graph {
 public:
  Graph() = default;
  // Takes over a reference the caller owns.
  static Graph adopt(braid_graph h) {
    Graph g;
    g.h_ = h;
    if (h) g.num_outputs_ = g.info().num_outputs;
    return g;
  }
  Graph(const Graph& o) : h_(o.h_), num_outputs_(o.num_outputs_) {
    if (h_) check(braid_graph_retain(h_));
  }
  Graph(Graph&& o) noexcept : h_(std::exchange(o.h_, nullptr)), num_outputs_(o.num_outputs_) {}
  Graph& operator=(Graph o) noexcept {
    std::swap(h_, o.h_);
    std::swap(num_outputs_, o.num_outputs_);
    return *this;
  }
  ~Graph() {
    if (h_) braid_graph_release(h_);
  }
  braid_graph get() const noexcept { return h_; }

  // Traces fn(inputs) on the calling thread: fn runs (imperatively) once and its kernels become the
  // graph. If fn throws, the trace is aborted and the exception goes on.
  template <class F>
  static Graph trace(const Context& ctx, List<Tensor> inputs, F&& fn) {
    const auto in = detail::handles(inputs);
    check(braid_graph_trace_begin(ctx.get(), static_cast<int32_t>(in.size()), in.data()));
    std::vector<Tensor> outs;
    try {
      outs = fn(inputs);
    } catch (...) {
      braid_graph_trace_abort();
      throw;
    }
    const auto out = detail::handles(outs);
    braid_graph h = nullptr;
    check(braid_graph_trace_end(ctx.get(), static_cast<int32_t>(out.size()), out.data(), &h));
    return adopt(h);
  }
  static Graph load(const Context& ctx, Device d, const std::string& json_path, const std::string& params_path) {
    braid_graph h = nullptr;
    check(braid_graph_load(ctx.get(), d, json_path.c_str(), params_path.c_str(), &h));
    return adopt(h);
  }
  void optimize(uint32_t passes = BRAID_GRAPH_PASS_ALL) const { check(braid_graph_optimize(h_, passes)); }
  // Runs the graph: g({x}) or g(vector_of_inputs).
  std::vector<Tensor> operator()(List<Tensor> inputs) const {
    const auto in = detail::handles(inputs);
    std::vector<braid_tensor> out(static_cast<size_t>(num_outputs_), nullptr);
    check(
        braid_graph_run(h_, static_cast<int32_t>(in.size()), in.data(), static_cast<int32_t>(out.size()), out.data()));
    return detail::adopt_all(out);
  }
  braid_graph_info info() const {
    braid_graph_info i{};
    i.struct_size = sizeof i;
    check(braid_graph_get_info(h_, &i));
    return i;
  }
  // Strings in the result are owned by the graph (valid until it is optimised or released).
  braid_graph_node_info node(int32_t index) const {
    braid_graph_node_info n{};
    n.struct_size = sizeof n;
    check(braid_graph_get_node(h_, index, &n));
    return n;
  }
  braid_graph_tensor_info input(int32_t index) const {
    braid_graph_tensor_info t{};
    t.struct_size = sizeof t;
    check(braid_graph_get_input(h_, index, &t));
    return t;
  }
  braid_graph_tensor_info output(int32_t index) const {
    braid_graph_tensor_info t{};
    t.struct_size = sizeof t;
    check(braid_graph_get_output(h_, index, &t));
    return t;
  }
  void save(const std::string& json_path, const std::string& params_path) const {
    check(braid_graph_save(h_, json_path.c_str(), params_path.c_str()));
  }

 private:
  braid_graph h_ = nullptr;
  int32_t num_outputs_ = 0;
};

// MXNet's hybridize: fn is traced once per input signature and run as a graph afterwards. fn must
// compute with braid ops only; it must outlive the Hybrid.
class Hybrid {
 public:
  using Fn = std::function<std::vector<Tensor>(std::span<const Tensor>)>;
  Hybrid(const Context& ctx, int32_t num_inputs, int32_t num_outputs, Fn fn, uint32_t passes = BRAID_GRAPH_PASS_ALL)
      : fn_(std::make_unique<Fn>(std::move(fn))), num_outputs_(num_outputs) {
    check(braid_hybrid_create(ctx.get(), &Hybrid::trampoline, fn_.get(), num_inputs, num_outputs, passes, &h_));
  }
  Hybrid(const Hybrid&) = delete;
  Hybrid& operator=(const Hybrid&) = delete;
  ~Hybrid() {
    if (h_) braid_hybrid_release(h_);
  }
  braid_hybrid get() const noexcept { return h_; }
  // Calls fn, traced or as its graph: h({x}) or h(vector_of_inputs).
  std::vector<Tensor> operator()(List<Tensor> inputs) const {
    const auto in = detail::handles(inputs);
    std::vector<braid_tensor> out(static_cast<size_t>(num_outputs_), nullptr);
    check(braid_hybrid_call(h_, in.data(), out.data()));
    return detail::adopt_all(out);
  }
  // The graph of the signature of these inputs (after a call with it), e.g. to save it.
  Graph graph(List<Tensor> inputs) const {
    const auto in = detail::handles(inputs);
    braid_graph g = nullptr;
    check(braid_hybrid_graph(h_, in.data(), &g));
    return Graph::adopt(g);
  }

 private:
  static braid_status trampoline(void* user, int32_t num_inputs, const braid_tensor* inputs, int32_t num_outputs,
                                 braid_tensor* outputs) {
    try {
      std::vector<Tensor> in;
      for (int32_t i = 0; i < num_inputs; ++i) {
        check(braid_tensor_retain(inputs[i]));
        in.push_back(Tensor::adopt(inputs[i]));
      }
      std::vector<Tensor> out = (*static_cast<Fn*>(user))(in);
      if (static_cast<int32_t>(out.size()) != num_outputs) return BRAID_ERR_INVALID_ARGUMENT;
      for (int32_t i = 0; i < num_outputs; ++i) {
        check(braid_tensor_retain(out[size_t(i)].get()));
        outputs[i] = out[size_t(i)].get();
      }
      return BRAID_OK;
    } catch (const Error& e) {
      return e.status();
    } catch (...) {
      return BRAID_ERR_INTERNAL;
    }
  }
  std::unique_ptr<Fn> fn_;
  int32_t num_outputs_ = 0;
  braid_hybrid h_ = nullptr;
};

// ---- processes and hosts ----------------------------------------------------------------------------

// A process group (braid_process_group_*, docs/DISTRIBUTED.md): the ranks of a job, joined on
// construction (from the launcher's variables unless options say otherwise).
class ProcessGroup {
 public:
  explicit ProcessGroup(const Context& ctx, const braid_process_group_options* options = nullptr) {
    check(braid_process_group_create(ctx.get(), options, &h_));
  }
  ProcessGroup(const ProcessGroup& o) : h_(o.h_) { check(braid_process_group_retain(h_)); }
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup() { braid_process_group_release(h_); }
  braid_process_group get() const noexcept { return h_; }
  braid_process_group_info info() const {
    braid_process_group_info i{};
    i.struct_size = sizeof i;
    check(braid_process_group_get_info(h_, &i));
    return i;
  }
  int32_t rank() const { return info().rank; }
  int32_t world_size() const { return info().world_size; }
  void allreduce(const Tensor& t, braid_collective_op op = BRAID_COLLECTIVE_SUM) const {
    check(braid_process_group_allreduce(h_, t.get(), op));
  }
  void broadcast(const Tensor& t, int32_t root) const { check(braid_process_group_broadcast(h_, t.get(), root)); }
  void reduce(const Tensor& t, int32_t root, braid_collective_op op = BRAID_COLLECTIVE_SUM) const {
    check(braid_process_group_reduce(h_, t.get(), root, op));
  }
  void all_gather(const Tensor& in, const Tensor& out) const {
    check(braid_process_group_all_gather(h_, in.get(), out.get()));
  }
  void reduce_scatter(const Tensor& in, const Tensor& out, braid_collective_op op = BRAID_COLLECTIVE_SUM) const {
    check(braid_process_group_reduce_scatter(h_, in.get(), out.get(), op));
  }
  void barrier() const { check(braid_process_group_barrier(h_)); }
  // Elastic jobs: braid-run has lost ranks ready to rejoin; checkpoint, then exit with BRAID_EXIT_REJOIN.
  bool rejoin_pending() const {
    int32_t pending = 0;
    check(braid_process_group_rejoin_pending(h_, &pending));
    return pending != 0;
  }
  void send(const Tensor& t, int32_t peer, int32_t tag = 0) const {
    check(braid_process_group_send(h_, t.get(), peer, tag));
  }
  void recv(const Tensor& t, int32_t peer, int32_t tag = 0) const {
    check(braid_process_group_recv(h_, t.get(), peer, tag));
  }

 private:
  braid_process_group h_ = nullptr;
};

// Makes the trainer reduce across the group's processes too (braid_trainer_set_process_group).
inline void set_process_group(const Trainer& tr, const ProcessGroup& pg) {
  check(braid_trainer_set_process_group(tr.get(), pg.get()));
}

}  // namespace braid

#endif  // BRAID_HPP_
