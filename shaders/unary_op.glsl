// The unary ops (braid_unary_op) on floats, as the CPU backend computes them (NaN passes through
// relu; sign gives 0 for NaN and for either zero, as torch.sign). Shared by UNARY and FUSED_ELEMENTWISE.
T unary_op(int op, T v) {
  switch (op) {
    case 0: return -v;
    case 1: return abs(v);
    case 2: return exp_T(v);
    case 3: return log_T(v);
    case 4: return sqrt(v);
    case 5: return v < 0.0 ? 0.0 : v;
    case 6: return sigmoid_T(v);
    case 7: return tanh_T(v);
    case 8: return v * v;
    default: return T(v > 0.0) - T(v < 0.0);
  }
}
