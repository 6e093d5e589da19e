// FILL, ARANGE, UNARY, BINARY, BINARY_SCALAR. All go through map() (common.h): operands are merged
// into as few axes as possible, and every run whose strides are 0 or 1 (dense, scalar broadcast, row
// broadcast, column broadcast) takes a loop specialised on that pattern that the compiler vectorises.
// Integer arithmetic wraps (done in unsigned, so it is defined behaviour).
#include "common.h"
// (common.h first: see the note at its top)
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "convert.h"
#include "elementwise_ops.h"
#include "vmath.h"

namespace braid::cpu::kern {
namespace {

template <class T>
using Unsigned = std::make_unsigned_t<T>;
template <class T>
inline T wrap_add(T a, T b) {
  return T(Unsigned<T>(a) + Unsigned<T>(b));
}
template <class T>
inline T wrap_sub(T a, T b) {
  return T(Unsigned<T>(a) - Unsigned<T>(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  return T(Unsigned<T>(a) * Unsigned<T>(b));
}

// ---- FILL / ARANGE -------------------------------------------------------------------------------

template <class T>
void fill_view(Exec& ex, const braid_buffer_view& out, double value) {
  const T v = convert<T>(value);
  map(
      ex, layout_of(out), kGrain, [v](T& o) { o = v; }, data_of<T>(out));
}

}  // namespace

KernelResult k_fill(const Call& c, Exec& ex) {
  visit_dtype(AllTypes{}, c.outputs[0].dtype, [&]<class T>(Tag<T>) { fill_view<T>(ex, c.outputs[0], c.f[0]); });
  return {};
}

KernelResult k_arange(const Call& c, Exec& ex) {
  const braid_buffer_view& out = c.outputs[0];
  const double start = c.f[0], step = c.f[1];
  const int64_t n = numel(out), s = out.ndim > 0 ? out.strides[out.ndim - 1] : 1;
  visit_dtype(NumericTypes{}, out.dtype, [&]<class T>(Tag<T>) {
    T* o = data_of<T>(out);
    // Each element from its index (no running sum), so chunks agree with a serial loop. Integers
    // exactly (a double holds only 53 bits), with wrapping arithmetic: the host checked every value fits.
    parallel(ex, n, kGrain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_integral_v<T>) {
        const auto first = static_cast<uint64_t>(static_cast<int64_t>(start));
        const auto stride = static_cast<uint64_t>(static_cast<int64_t>(step));
        for (int64_t k = b; k < e; ++k) o[k * s] = static_cast<T>(first + static_cast<uint64_t>(k) * stride);
      } else {
        for (int64_t k = b; k < e; ++k) o[k * s] = convert<T>(start + double(k) * step);
      }
    });
  });
  return {};
}

// ---- UNARY ---------------------------------------------------------------------------------------

namespace {

// Transcendental ops (kGrainHeavy) are compute-bound: they take the AVX2 clone (BRAID_HOT).
template <class T, class F>
void unary_map(Exec& ex, const Call& c, int64_t grain, F f) {
  const auto& in = c.inputs[0];
  const auto& out = c.outputs[0];
  auto fn = [f](T& o, T x) { o = f(x); };
  if (grain == kGrainHeavy)
    map<true>(ex, layout_of(out, in), grain, fn, data_of<T>(out), data_of<const T>(in));
  else
    map(ex, layout_of(out, in), grain, fn, data_of<T>(out), data_of<const T>(in));
}

template <class T>
bool unary_typed(Exec& ex, const Call& c, braid_unary_op op) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case BRAID_UNARY_NEG: unary_map<T>(ex, c, kGrain, [](T x) { return wrap_sub(T(0), x); }); return true;
      case BRAID_UNARY_ABS: unary_map<T>(ex, c, kGrain, [](T x) { return x < 0 ? wrap_sub(T(0), x) : x; }); return true;
      case BRAID_UNARY_RELU: unary_map<T>(ex, c, kGrain, [](T x) { return x < 0 ? T(0) : x; }); return true;
      case BRAID_UNARY_SQUARE: unary_map<T>(ex, c, kGrain, [](T x) { return wrap_mul(x, x); }); return true;
      case BRAID_UNARY_SIGN: unary_map<T>(ex, c, kGrain, [](T x) { return T((x > 0) - (x < 0)); }); return true;
      default: return false;
    }
  } else {
    return with_float_unary<T>(op, [&](auto fn, bool heavy) { unary_map<T>(ex, c, heavy ? kGrainHeavy : kGrain, fn); });
  }
}

}  // namespace

KernelResult k_unary(const Call& c, Exec& ex) {
  const auto op = braid_unary_op(c.i[0]);
  bool done = false;
  visit_dtype(NumericTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { done = unary_typed<T>(ex, c, op); });
  if (!done) return unsupported(c.op, c.inputs[0].dtype, ("unary op " + std::to_string(c.i[0])).c_str());
  return {};
}

// ---- BINARY / BINARY_SCALAR ----------------------------------------------------------------------

namespace {

// Integer a / b toward zero, and a ** b by squaring (b < 0: 1 / a^|b| truncated). bad is set for a
// zero divisor (the caller fails the op) instead of trapping; INT_MIN / -1 wraps.
template <class T>
inline T int_div(T a, T b, bool& bad) {
  if (b == 0) {
    bad = true;
    return 0;
  }
  return b == -1 ? wrap_sub(T(0), a) : T(a / b);
}
// Python's // and % on integers (the quotient toward -inf, the remainder with b's sign), as PyTorch's
// floor_divide and remainder; a zero divisor sets bad, INT_MIN // -1 wraps.
template <class T>
inline T int_floor_divide(T a, T b, bool& bad) {
  if (b == 0) {
    bad = true;
    return 0;
  }
  if (b == -1) return wrap_sub(T(0), a);
  const T q = T(a / b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}
template <class T>
inline T int_mod(T a, T b, bool& bad) {
  if (b == 0) {
    bad = true;
    return 0;
  }
  if (b == -1) return 0;
  const T r = T(a % b);
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}
template <class T>
inline T int_pow(T a, T b, bool& bad) {
  if (b < 0) {
    if (a == 0) bad = true;
    return a == 1 ? T(1) : a == -1 ? T((b & 1) ? -1 : 1) : T(0);
  }
  T r = 1;
  for (T base = a; b != 0; b >>= 1, base = wrap_mul(base, base))
    if (b & 1) r = wrap_mul(r, base);
  return r;
}

template <class T, class F>
void binary_map(Exec& ex, const Layout<3>& L, T* o, const T* a, const T* b, F op) {
  map(
      ex, L, kGrain, [op](T& r, T x, T y) { r = op(x, y); }, o, a, b);
}

// Integer DIV/POW: chunk-local error flags, so the lambdas stay free of shared state.
template <class T, class F>
bool binary_checked(Exec& ex, const Layout<3>& L, T* o, const T* a, const T* b, F op) {
  std::atomic<bool> bad{false};
  parallel(ex, L.numel, kGrain, [&](int64_t begin, int64_t end) {
    bool local = false;
    auto f = [&local, op](T& r, T x, T y) { r = op(x, y, local); };
    map_range(L, begin, end, f, o, a, b);
    if (local) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load();
}

template <class T>
KernelResult binary_typed(Exec& ex, const Call& c, braid_binary_op op, const Layout<3>& L, T* o, const T* a,
                          const T* b) {
  auto run = [&](auto f) { binary_map<T>(ex, L, o, a, b, f); };
  if constexpr (!std::is_integral_v<T>) {
    if (!with_float_binary<T>(op, run))
      return unsupported(c.op, c.inputs[0].dtype, ("binary op " + std::to_string(int(op))).c_str());
  } else {
    switch (op) {
      case BRAID_BINARY_ADD: run([](T x, T y) { return wrap_add(x, y); }); break;
      case BRAID_BINARY_SUB: run([](T x, T y) { return wrap_sub(x, y); }); break;
      case BRAID_BINARY_MUL: run([](T x, T y) { return wrap_mul(x, y); }); break;
      case BRAID_BINARY_DIV:
        if (!binary_checked<T>(ex, L, o, a, b, int_div<T>))
          return fail(BRAID_ERR_KERNEL, std::string(op_name(c.op)) + ": integer division by zero");
        break;
      case BRAID_BINARY_POW:
        if (!binary_checked<T>(ex, L, o, a, b, int_pow<T>))
          return fail(BRAID_ERR_KERNEL, std::string(op_name(c.op)) + ": integer zero to a negative power");
        break;
      case BRAID_BINARY_FLOOR_DIVIDE:
        if (!binary_checked<T>(ex, L, o, a, b, int_floor_divide<T>))
          return fail(BRAID_ERR_KERNEL, std::string(op_name(c.op)) + ": integer division by zero");
        break;
      case BRAID_BINARY_MOD:
        if (!binary_checked<T>(ex, L, o, a, b, int_mod<T>))
          return fail(BRAID_ERR_KERNEL, std::string(op_name(c.op)) + ": integer modulo by zero");
        break;
      case BRAID_BINARY_MAXIMUM: run([](T x, T y) { return max_nan(x, y); }); break;
      case BRAID_BINARY_MINIMUM: run([](T x, T y) { return min_nan(x, y); }); break;
      case BRAID_BINARY_EQUAL: run([](T x, T y) { return x == y ? T(1) : T(0); }); break;
      case BRAID_BINARY_LESS: run([](T x, T y) { return x < y ? T(1) : T(0); }); break;
      case BRAID_BINARY_GREATER: run([](T x, T y) { return x > y ? T(1) : T(0); }); break;
      default: return unsupported(c.op, c.inputs[0].dtype, ("binary op " + std::to_string(int(op))).c_str());
    }
  }
  return {};
}

}  // namespace

KernelResult k_binary(const Call& c, Exec& ex) {
  KernelResult r;
  const auto& out = c.outputs[0];
  visit_dtype(NumericTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) {
    r = binary_typed<T>(ex, c, braid_binary_op(c.i[0]), layout_of(out, c.inputs[0], c.inputs[1]), data_of<T>(out),
                        data_of<const T>(c.inputs[0]), data_of<const T>(c.inputs[1]));
  });
  return r;
}

// out = cond != 0 ? a : b. A NaN cond is nonzero (the comparison is true); a and b are only copied.
KernelResult k_where(const Call& c, Exec& ex) {
  const auto& out = c.outputs[0];
  visit_dtype(NumericTypes{}, out.dtype, [&]<class T>(Tag<T>) {
    map(
        ex, layout_of(out, c.inputs[0], c.inputs[1], c.inputs[2]), kGrain,
        [](T& r, T cond, T a, T b) { r = cond != T(0) ? a : b; }, data_of<T>(out), data_of<const T>(c.inputs[0]),
        data_of<const T>(c.inputs[1]), data_of<const T>(c.inputs[2]));
  });
  return {};
}

// x op s (or s op x): the scalar becomes a stride-0 operand, so this is BINARY's broadcast path.
KernelResult k_binary_scalar(const Call& c, Exec& ex) {
  KernelResult r;
  const auto& out = c.outputs[0];
  const auto& in = c.inputs[0];
  const bool reverse = c.i[1] != 0;
  static constexpr int64_t zeros[BRAID_MAX_DIMS] = {};
  visit_dtype(NumericTypes{}, in.dtype, [&]<class T>(Tag<T>) {
    const T s = convert<T>(c.f[0]);
    const Layout<3> L =
        make_layout<3>(out.ndim, out.shape, {out.strides, reverse ? zeros : in.strides, reverse ? in.strides : zeros});
    const T* x = data_of<const T>(in);
    r = binary_typed<T>(ex, c, braid_binary_op(c.i[0]), L, data_of<T>(out), reverse ? &s : x, reverse ? x : &s);
  });
  return r;
}

// ---- COMBINE ---------------------------------------------------------------------------------------

namespace {

// Block of elements combined in a stack buffer: the inputs are read and every output written while
// the block is in L1, so a collective's fused reduce-and-broadcast is one pass over memory.
constexpr int64_t kCombineBlock = 2048;

template <class T, class F>
void combine_typed(Exec& ex, const Call& c, F op) {
  const int k = c.num_inputs, m = c.num_outputs;
  const bool average = c.i[1] != 0;
  const double divisor = c.f[0];
  std::array<const T*, BRAID_KERNEL_MAX_INPUTS> in{};
  std::array<T*, BRAID_KERNEL_MAX_OUTPUTS> out{};
  for (int j = 0; j < k; ++j) in[size_t(j)] = data_of<const T>(c.inputs[j]);
  for (int j = 0; j < m; ++j) out[size_t(j)] = data_of<T>(c.outputs[j]);
  if (k == 2 && m == 2 && !average) {
    // Two devices' allreduce, the common case: one fused loop without the block buffer.
    const T *a = in[0], *b = in[1];
    T *o0 = out[0], *o1 = out[1];
    parallel(ex, numel(c.outputs[0]), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const T v = op(a[e], b[e]);
        o0[e] = v;
        o1[e] = v;
      }
    });
    return;
  }
  parallel(ex, numel(c.outputs[0]), kGrain, [&](int64_t begin, int64_t end) {
    T acc[kCombineBlock];
    for (int64_t b = begin; b < end; b += kCombineBlock) {
      const int64_t len = std::min(kCombineBlock, end - b);
      for (int64_t e = 0; e < len; ++e) acc[e] = in[0][b + e];
      for (int j = 1; j < k; ++j) {
        const T* x = in[size_t(j)] + b;
        for (int64_t e = 0; e < len; ++e) acc[e] = op(acc[e], x[e]);
      }
      if constexpr (!std::is_integral_v<T>) {
        if (average) {
          const T d = static_cast<T>(divisor);
          for (int64_t e = 0; e < len; ++e) acc[e] /= d;
        }
      }
      for (int j = 0; j < m; ++j) std::memcpy(out[size_t(j)] + b, acc, size_t(len) * sizeof(T));
    }
  });
}

}  // namespace

// Every input is read for an element before any output is written, so an output may be one of the
// inputs (a collective combines in place); views are contiguous (the host builds flat views).
KernelResult k_combine(const Call& c, Exec& ex) {
  for (int j = 0; j < c.num_inputs; ++j)
    if (!is_contiguous(c.inputs[j])) return unsupported(c.op, c.inputs[0].dtype, "strided input");
  for (int j = 0; j < c.num_outputs; ++j)
    if (!is_contiguous(c.outputs[j])) return unsupported(c.op, c.inputs[0].dtype, "strided output");
  const auto op = braid_binary_op(c.i[0]);
  bool known = true;
  visit_dtype(NumericTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) {
    constexpr bool integral = std::is_integral_v<T>;
    switch (op) {
      case BRAID_BINARY_ADD:
        if constexpr (integral)
          combine_typed<T>(ex, c, [](T x, T y) { return wrap_add(x, y); });
        else
          combine_typed<T>(ex, c, [](T x, T y) { return x + y; });
        break;
      case BRAID_BINARY_MUL:
        if constexpr (integral)
          combine_typed<T>(ex, c, [](T x, T y) { return wrap_mul(x, y); });
        else
          combine_typed<T>(ex, c, [](T x, T y) { return x * y; });
        break;
      case BRAID_BINARY_MAXIMUM: combine_typed<T>(ex, c, [](T x, T y) { return max_nan(x, y); }); break;
      case BRAID_BINARY_MINIMUM: combine_typed<T>(ex, c, [](T x, T y) { return min_nan(x, y); }); break;
      default: known = false;
    }
  });
  if (!known) return unsupported(c.op, c.inputs[0].dtype, ("combine op " + std::to_string(int(op))).c_str());
  return {};
}

}  // namespace braid::cpu::kern
