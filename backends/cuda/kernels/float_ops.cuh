// The float unary and binary ops of UNARY, BINARY and BINARY_SCALAR, shared by the kernels nvcc builds
// (elementwise.cu) and the fused kernels NVRTC builds at run time (fused.cpp embeds this file), so a
// fused chain computes what the separate kernels would. Self-contained on purpose: NVRTC compiles it
// without the standard library. The op numbers are braid_unary_op and braid_binary_op values
// (elementwise.cu checks that they match).
#pragma once

template <class T>
__device__ __forceinline__ T braid_float_unary(int op, T x) {
  switch (op) {
    case 0: return -x;                           // NEG
    case 1: return fabs(x);                      // ABS
    case 2: return exp(x);                       // EXP
    case 3: return log(x);                       // LOG
    case 4: return sqrt(x);                      // SQRT
    case 5: return x < T(0) ? T(0) : x;          // RELU (NaN propagates)
    case 6: return T(1) / (T(1) + exp(-x));      // SIGMOID
    case 7: return tanh(x);                      // TANH
    case 8: return x * x;                        // SQUARE
    default: return T((x > T(0)) - (x < T(0)));  // SIGN: 0 for NaN and both zeros, as torch.sign
  }
}

// Python's // and % as NumPy's divmod computes them (backends/cpu/kernels/elementwise_ops.h has the
// same): from fmod's exact remainder, the quotient toward -inf and a remainder with y's sign.
template <class T>
__device__ __forceinline__ T braid_floor_divide(T x, T y) {
  if (y == T(0)) return x / y;
  const T mod = fmod(x, y);
  T div = (x - mod) / y;
  if (mod != T(0) && ((y < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return copysign(T(0), x / y);
  const T floored = floor(div);
  return div - floored > T(0.5) ? floored + T(1) : floored;
}
template <class T>
__device__ __forceinline__ T braid_mod(T x, T y) {
  const T mod = fmod(x, y);
  if (y == T(0)) return mod;
  if (mod == T(0)) return copysign(T(0), y);
  return (y < T(0)) != (mod < T(0)) ? mod + y : mod;
}

template <class T>
__device__ __forceinline__ T braid_float_binary(int op, T x, T y) {
  switch (op) {
    case 0: return x + y;                                         // ADD
    case 1: return x - y;                                         // SUB
    case 2: return x * y;                                         // MUL
    case 3: return x / y;                                         // DIV
    case 4: return y == T(2) ? x * x : pow(x, y);                 // POW
    case 5: return (x != x || y != y) ? x + y : (y > x ? y : x);  // MAXIMUM: NaN propagates; a tie gives x
    case 6: return (x != x || y != y) ? x + y : (y < x ? y : x);  // MINIMUM
    case 7: return x == y ? T(1) : T(0);                          // EQUAL
    case 8: return x < y ? T(1) : T(0);                           // LESS
    case 9: return x > y ? T(1) : T(0);                           // GREATER
    case 10: return braid_floor_divide(x, y);                     // FLOOR_DIVIDE
    default: return braid_mod(x, y);                              // MOD
  }
}
