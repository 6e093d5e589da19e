// Reducers and the run folder shared by REDUCE, SOFTMAX and SOFTMAX_CE. A reducer has an
// accumulator type, init, add (one element), merge (two partials) and finish (partial, count).
// float32 accumulates in double; integers in uint64 (wrapping, like the int dtypes themselves).
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <limits>

namespace braid::cpu::kern {

template <class T> using SumAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
struct SumR {
  using Acc = SumAcc<T>;
  static Acc init() { return Acc(0); }
  static Acc add(Acc a, T x) { return a + Acc(x); }  // ints: via uint64, so overflow wraps
  static Acc merge(Acc a, Acc b) { return a + b; }
  static T finish(Acc a, int64_t) {
    if constexpr (std::is_integral_v<T>) return T(int64_t(a));
    else return T(a);
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
template <class T>
struct MaxR {
  using Acc = T;
  static T init() {
    if constexpr (std::is_integral_v<T>) return std::numeric_limits<T>::lowest();
    else return -std::numeric_limits<T>::infinity();
  }
  static T add(T a, T x) { return (x > a || x != x) ? x : a; }
  static T merge(T a, T b) { return add(a, b); }
  static T finish(T a, int64_t) { return a; }
};
template <class T>
struct MinR : MaxR<T> {
  static T init() {
    if constexpr (std::is_integral_v<T>) return std::numeric_limits<T>::max();
    else return std::numeric_limits<T>::infinity();
  }
  static T add(T a, T x) { return (x < a || x != x) ? x : a; }
  static T merge(T a, T b) { return add(a, b); }
};

// Folds n elements x[0], x[s], ... Eight accumulators break the add-latency chain and let the
// compiler pack them into vector registers.
template <class R, class T>
typename R::Acc fold_run(const T* x, int64_t n, int64_t s) {
  using Acc = typename R::Acc;
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
