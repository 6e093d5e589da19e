// Reducers and the run folder shared by REDUCE, SOFTMAX and SOFTMAX_CE. A reducer has an
// accumulator type, init, add (one element), merge (two partials) and finish (partial, count).
// float32 accumulates in double; integers in uint64 (wrapping, like the int dtypes themselves).
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <cstring>
#include <limits>

namespace braid::cpu::kern {

template <class T>
using SumAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
struct SumR {
  using Acc = SumAcc<T>;
  static Acc init() { return Acc(0); }
  static Acc add(Acc a, T x) { return a + Acc(x); }  // ints: via uint64, so overflow wraps
  static Acc merge(Acc a, Acc b) { return a + b; }
  static T finish(Acc a, int64_t) {
    if constexpr (std::is_integral_v<T>)
      return T(int64_t(a));
    else
      return T(a);
  }
};
template <class T>
struct MeanR : SumR<T> {
  static T finish(double a, int64_t n) { return T(a / double(n)); }
};
template <class T>
struct NormR : SumR<T> {
  static double add(double a, T x) { return a + double(x) * double(x); }
  static T finish(double a, int64_t) { return T(std::sqrt(a)); }
};
// Max/min propagate NaN: once the accumulator is NaN no comparison replaces it.
template <class T, bool IsMax>
struct ExtremumR {
  using Acc = T;
  static T init() {
    if constexpr (std::is_integral_v<T>)
      return IsMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    else
      return IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  }
  static bool beats(T x, T a) { return IsMax ? x > a : x < a; }
  static T add(T a, T x) { return (beats(x, a) || x != x) ? x : a; }
  static T merge(T a, T b) { return add(a, b); }
  static T finish(T a, int64_t) { return a; }
  // Dense runs: GCC does not vectorise a multi-accumulator max (NaN-aware or not), so this one is
  // written with GCC/Clang vector types: two SSE-width accumulators, NaN lanes recorded separately
  // and reapplied at the end. Memory-bound like a sum.
  static T fold_dense(const T* x, int64_t n) {
    typedef T V __attribute__((vector_size(16)));
    constexpr int64_t L = 16 / sizeof(T);
    V a0 = V{} + init(), a1 = a0;
    auto bad = a0 != a0;  // all-false lane mask of V's width
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      V v0, v1;
      std::memcpy(&v0, x + i, sizeof(V));
      std::memcpy(&v1, x + i + L, sizeof(V));
      if constexpr (IsMax) {
        a0 = v0 > a0 ? v0 : a0;
        a1 = v1 > a1 ? v1 : a1;
      } else {
        a0 = v0 < a0 ? v0 : a0;
        a1 = v1 < a1 ? v1 : a1;
      }
      if constexpr (std::is_floating_point_v<T>) bad |= (v0 != v0) | (v1 != v1);
    }
    T r = init();
    bool any = false;
    for (int64_t l = 0; l < L; ++l) {
      r = add(add(r, a0[l]), a1[l]);
      any = any || bad[l] != 0;
    }
    for (; i < n; ++i) r = add(r, x[i]);
    if constexpr (std::is_floating_point_v<T>)
      if (any) return std::numeric_limits<T>::quiet_NaN();
    return r;
  }
};
template <class T>
using MaxR = ExtremumR<T, true>;
template <class T>
using MinR = ExtremumR<T, false>;

// Dense float32 sum in double: sixteen double lanes in 32-byte vectors, converted four floats at a time.
// The x86-64-v3 clone converts and adds four lanes per instruction where the baseline's scalar-array
// accumulators (fold_run) pack two; the bias gradient of a conv layer (a sum over N, H, W of the
// output gradient) is this loop over megabytes.
template <class T>  // float (a template: GCC's target_clones do not combine with a plain inline function)
BRAID_HOT double sum_dense_f32(const T* x, int64_t n) {
  static_assert(std::is_same_v<T, float>);
  typedef float F4 __attribute__((vector_size(16)));
  typedef double D4 __attribute__((vector_size(32)));
  D4 a0{}, a1{}, a2{}, a3{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    F4 v0, v1, v2, v3;
    std::memcpy(&v0, x + i, 16);
    std::memcpy(&v1, x + i + 4, 16);
    std::memcpy(&v2, x + i + 8, 16);
    std::memcpy(&v3, x + i + 12, 16);
    a0 += __builtin_convertvector(v0, D4);
    a1 += __builtin_convertvector(v1, D4);
    a2 += __builtin_convertvector(v2, D4);
    a3 += __builtin_convertvector(v3, D4);
  }
  a0 = (a0 + a1) + (a2 + a3);
  double r = (a0[0] + a0[1]) + (a0[2] + a0[3]);
  for (; i < n; ++i) r += double(x[i]);
  return r;
}

// Folds n elements x[0], x[s], ... Eight accumulators break the add-latency chain and let the
// compiler pack them into vector registers (reducers with a fold_dense take it for dense runs).
template <class R, class T>
typename R::Acc fold_run(const T* x, int64_t n, int64_t s) {
  using Acc = typename R::Acc;
  if constexpr (requires { R::fold_dense(x, n); })
    if (s == 1) return R::fold_dense(x, n);
  if constexpr (std::is_same_v<R, SumR<float>> || std::is_same_v<R, MeanR<float>>)
    if (s == 1) return sum_dense_f32(x, n);
  Acc a[8];
  for (auto& v : a) v = R::init();
  int64_t i = 0;
  if (s == 1) {
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) a[k] = R::add(a[k], x[i + k]);
  } else {
    for (; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) a[k] = R::add(a[k], x[(i + k) * s]);
  }
  for (; i < n; ++i) a[0] = R::add(a[0], x[i * s]);
  for (int w = 4; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) a[k] = R::merge(a[k], a[k + w]);
  return a[0];
}

}  // namespace braid::cpu::kern
