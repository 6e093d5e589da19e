// The element functions of the floating-point UNARY and BINARY ops, in one place: the UNARY, BINARY
// and BINARY_SCALAR kernels and FUSED_ELEMENTWISE (fused.cpp) apply the same ones, so a fused chain
// gives the unfused chain's results element for element.
#pragma once
#include <cmath>
#include <type_traits>

#include "braid_backend.h"
#include "vmath.h"

namespace braid::cpu::kern {

// Max/min as torch.maximum/minimum: NaN from either side propagates, and a tie (-0 and +0) gives the
// first operand.
template <class T>
inline T max_nan(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return b > a ? b : a;
  else
    return (a != a || b != b) ? a + b : (b > a ? b : a);
}
template <class T>
inline T min_nan(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return b < a ? b : a;
  else
    return (a != a || b != b) ? a + b : (b < a ? b : a);
}

// Python's // and % on floats, as NumPy's divmod computes them (and PyTorch's floor_divide and
// remainder): from fmod's exact remainder, a quotient rounded toward -inf and a remainder with the
// divisor's sign. A zero divisor gives a / 0 (inf or NaN) and fmod's NaN.
template <class T>
inline T floor_divide_float(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  const T floored = std::floor(div);
  return div - floored > T(0.5) ? floored + T(1) : floored;
}
template <class T>
inline T mod_float(T a, T b) {
  const T mod = std::fmod(a, b);
  if (b == T(0)) return mod;
  if (mod == T(0)) return std::copysign(T(0), b);
  return (b < T(0)) != (mod < T(0)) ? mod + b : mod;
}

// Calls f(fn, heavy) with the element function of a float unary op (heavy: transcendental,
// compute-bound); false for an op it does not know.
template <class T, class F>
bool with_float_unary(braid_unary_op op, F&& f) {
  switch (op) {
    case BRAID_UNARY_NEG: f([](T x) { return -x; }, false); return true;
    case BRAID_UNARY_ABS: f([](T x) { return std::fabs(x); }, false); return true;
    case BRAID_UNARY_EXP: f([](T x) { return v_exp(x); }, true); return true;
    case BRAID_UNARY_LOG: f([](T x) { return v_log(x); }, true); return true;
    case BRAID_UNARY_SQRT: f([](T x) { return v_sqrt(x); }, false); return true;
    // NaN propagates (the comparison is false), as in PyTorch.
    case BRAID_UNARY_RELU: f([](T x) { return x < T(0) ? T(0) : x; }, false); return true;
    case BRAID_UNARY_SIGMOID: f([](T x) { return v_sigmoid(x); }, true); return true;
    case BRAID_UNARY_TANH: f([](T x) { return v_tanh(x); }, true); return true;
    case BRAID_UNARY_SQUARE: f([](T x) { return x * x; }, false); return true;
    case BRAID_UNARY_SIGN: f([](T x) { return T((x > T(0)) - (x < T(0))); }, false); return true;  // NaN: 0
    default: return false;
  }
}

// Calls f(fn) with the element function of a float binary op; false for an op it does not know.
template <class T, class F>
bool with_float_binary(braid_binary_op op, F&& f) {
  switch (op) {
    case BRAID_BINARY_ADD: f([](T x, T y) { return x + y; }); return true;
    case BRAID_BINARY_SUB: f([](T x, T y) { return x - y; }); return true;
    case BRAID_BINARY_MUL: f([](T x, T y) { return x * y; }); return true;
    case BRAID_BINARY_DIV: f([](T x, T y) { return x / y; }); return true;
    // Cheap exact forms for the exponents that dominate in practice (x**2 from a scalar).
    case BRAID_BINARY_POW: f([](T x, T y) { return y == T(2) ? x * x : std::pow(x, y); }); return true;
    case BRAID_BINARY_MAXIMUM: f([](T x, T y) { return max_nan(x, y); }); return true;
    case BRAID_BINARY_MINIMUM: f([](T x, T y) { return min_nan(x, y); }); return true;
    case BRAID_BINARY_EQUAL: f([](T x, T y) { return x == y ? T(1) : T(0); }); return true;
    case BRAID_BINARY_LESS: f([](T x, T y) { return x < y ? T(1) : T(0); }); return true;
    case BRAID_BINARY_GREATER: f([](T x, T y) { return x > y ? T(1) : T(0); }); return true;
    case BRAID_BINARY_FLOOR_DIVIDE: f([](T x, T y) { return floor_divide_float(x, y); }); return true;
    case BRAID_BINARY_MOD: f([](T x, T y) { return mod_float(x, y); }); return true;
    default: return false;
  }
}

}  // namespace braid::cpu::kern
