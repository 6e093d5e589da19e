// The binary ops (braid_binary_op) on float32; max/min as the CPU backend (and torch.maximum): NaN
// from either side propagates, a tie (-0 and +0) gives the first operand.
T binary_op(int op, T a, T b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return pow_T(a, b);
    case 5: return isnan(a) || isnan(b) ? a + b : (b > a ? b : a);
    case 6: return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
    case 7: return a == b ? 1.0 : 0.0;
    case 8: return a < b ? 1.0 : 0.0;
    default: return a > b ? 1.0 : 0.0;
  }
}
