// The unary ops (braid_unary_op) on floats, as the CPU backend computes them (NaN passes through
// relu; sign gives 0 for NaN and for either zero, as torch.sign). Shared by UNARY and FUSED_ELEMENTWISE;
// the result is `precise` for the reason binary_op.glsl gives.
T unary_op(int op, T v) {
  precise T r;
  const T zero = T(runtime_zero());  // relu's and sign's 0 and 1: see common.glsl
  switch (op) {
    case 0: r = -v; break;
    case 1: r = abs(v); break;
    case 2: r = exp_T(v); break;
    case 3: r = log_T(v); break;
    case 4: r = sqrt(v); break;
    case 5: r = v < 0.0 ? zero : v; break;
    case 6: r = sigmoid_T(v); break;
    case 7: r = tanh_T(v); break;
    case 8: r = v * v; break;
    default: r = v > 0.0 ? T(1.0) + zero : v < 0.0 ? T(-1.0) + zero : zero; break;
  }
  return r;
}
