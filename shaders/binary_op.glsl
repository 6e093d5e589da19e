// The binary ops (braid_binary_op) on float32 (float64 with -DF64); max/min as the CPU backend (and
// torch.maximum): NaN from either side propagates, a tie (-0 and +0) gives the first operand. The
// result is `precise`: a fused kernel inlines this function into a chain, where the optimiser would
// otherwise fold (a + b) - b into a or a - a into 0 across instructions (the separate kernels store
// every result).
// Python's // and % (FLOOR_DIVIDE, MOD) as NumPy's divmod computes them, like the CPU backend: from
// an exact fmod, the quotient toward -inf and a remainder with b's sign. GLSL's mod() is
// a - b * floor(a / b), rounded (7 % 0.1 would give about 0 instead of 0.0999999), so fmod_T does the
// long division itself: b doubled up to a's binade, then halved back, subtracting where it fits (each
// subtraction is exact: t <= r < 2t). Doubling and halving are exact, subnormals included.
bool sign_bit_T(T v) {
#ifdef F64
  return (unpackDouble2x32(v).y >> 31) != 0u;
#else
  return (floatBitsToUint(v) >> 31) != 0u;
#endif
}
T signed_zero_T(bool negative) {
  const T zero = T(runtime_zero());
  return negative ? -zero : zero;
}
T fmod_T(T a, T b) {
  if (isnan(a) || isnan(b) || isinf(a) || b == T(0)) return nan_T();
  const T ab = abs(b);
  precise T r = abs(a);
  if (isinf(b) || r < ab) return a;
  T t = ab;
  while (T(2.0) * t <= r) t *= T(2.0);  // t <= r < 2t (an overflow to inf stops it)
  for (; t >= ab; t *= T(0.5))
    if (r >= t) r -= t;
  return sign_bit_T(a) ? -r : r;
}
T floor_divide_T(T a, T b) {
  if (b == T(0)) return a / b;
  const T m = fmod_T(a, b);
  precise T div = (a - m) / b;
  if (m != T(0) && ((b < T(0)) != (m < T(0)))) div -= T(1.0);
  if (div == T(0)) return signed_zero_T(sign_bit_T(a) != sign_bit_T(b));
  const T floored = floor(div);
  return div - floored > T(0.5) ? floored + T(1.0) : floored;
}
T mod_T(T a, T b) {
  const T m = fmod_T(a, b);
  if (b == T(0) || isnan(m)) return m;
  if (m == T(0)) return signed_zero_T(sign_bit_T(b));
  precise T r = (b < T(0)) != (m < T(0)) ? m + b : m;
  return r;
}

T binary_op(int op, T a, T b) {
  precise T r;
  const T zero = T(runtime_zero());  // comparisons' 0 and 1: see common.glsl
  switch (op) {
    case 0: r = a + b; break;
    case 1: r = a - b; break;
    case 2: r = a * b; break;
    case 3: r = a / b; break;
    case 4: r = pow_T(a, b); break;
    case 5: r = isnan(a) || isnan(b) ? a + b : (b > a ? b : a); break;
    case 6: r = isnan(a) || isnan(b) ? a + b : (b < a ? b : a); break;
    case 7: r = a == b ? T(1.0) + zero : zero; break;
    case 8: r = a < b ? T(1.0) + zero : zero; break;
    case 9: r = a > b ? T(1.0) + zero : zero; break;
    case 10: r = floor_divide_T(a, b); break;
    default: r = mod_T(a, b); break;
  }
  return r;
}
