// The binary ops (braid_binary_op) on float32; max/min as the CPU backend (and torch.maximum): NaN
// from either side propagates, a tie (-0 and +0) gives the first operand. The result is `precise`: a
// fused kernel inlines this function into a chain, where the optimiser would otherwise fold
// (a + b) - b into a or a - a into 0 across instructions (the separate kernels store every result).
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
    default: r = a > b ? T(1.0) + zero : zero; break;
  }
  return r;
}
