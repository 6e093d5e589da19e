// Reference: arrays, rounding to storage types, creation, elementwise ops, reductions and layout.
// The neural-network ops live in reference_nn.cpp and the RNG in reference_rng.cpp.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace ref {

// ---- arrays -------------------------------------------------------------------------------------

int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Array::Array(Shape s, std::vector<double> d) : shape(std::move(s)), data(std::move(d)) {
  if (static_cast<int64_t>(data.size()) != ref::numel(shape))
    throw std::invalid_argument("ref::Array: data size does not match shape " + to_string(shape));
}

Array::Array(Shape s, double fill) : shape(std::move(s)), data(static_cast<size_t>(ref::numel(shape)), fill) {}

static int64_t offset_of(const Shape& shape, std::span<const int64_t> index) {
  int64_t off = 0;
  for (size_t i = 0; i < shape.size(); ++i) off = off * shape[i] + index[i];
  return off;
}

double& Array::at(std::span<const int64_t> index) { return data[static_cast<size_t>(offset_of(shape, index))]; }
double Array::at(std::span<const int64_t> index) const { return data[static_cast<size_t>(offset_of(shape, index))]; }

// Calls fn(index) for every multi-index of shape in row-major order.
template <class F>
static void for_each_index(const Shape& shape, F&& fn) {
  if (numel(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  for (;;) {
    fn(std::span<const int64_t>(idx));
    size_t d = shape.size();
    while (d > 0 && ++idx[d - 1] == shape[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

// ---- rounding -----------------------------------------------------------------------------------

// Rounds to a binary floating format with p significant bits, minimum normal exponent emin and
// largest finite value max_finite, to nearest even, with subnormals and overflow to infinity. Scaling
// by the unit in the last place is exact, so nearbyint (round-half-even by default) does the rounding.
static double round_binary(double x, int p, int emin, double max_finite) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e)
  const int ulp_exp = std::max(e - p, emin - p + 1);
  const double q = std::ldexp(std::nearbyint(std::ldexp(std::fabs(x), -ulp_exp)), ulp_exp);
  if (q > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return std::copysign(q, x);
}

double round_to(braid_dtype dtype, double x) {
  switch (dtype) {
    case BRAID_FLOAT64: return x;
    case BRAID_FLOAT32: return round_binary(x, 24, -126, std::ldexp(2.0 - std::ldexp(1.0, -23), 127));
    case BRAID_FLOAT16: return round_binary(x, 11, -14, 65504.0);
    case BRAID_BFLOAT16: return round_binary(x, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127));
    case BRAID_INT32:
    case BRAID_INT64:
    case BRAID_UINT8: return std::trunc(x);
    default: throw std::invalid_argument("ref::round_to: bad dtype");
  }
}

Array round_to(braid_dtype dtype, Array a) {
  for (double& v : a.data) v = round_to(dtype, v);
  return a;
}

// ---- creation -----------------------------------------------------------------------------------

Array full(const Shape& s, double value) { return Array(s, value); }

Array arange(double start, double stop, double step) {
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  Array out({n});
  for (int64_t k = 0; k < n; ++k) out.data[static_cast<size_t>(k)] = start + static_cast<double>(k) * step;
  return out;
}

// ---- elementwise --------------------------------------------------------------------------------

double unary(braid_unary_op op, double x) {
  switch (op) {
    case BRAID_UNARY_NEG: return -x;
    case BRAID_UNARY_ABS: return std::fabs(x);
    case BRAID_UNARY_EXP: return std::exp(x);
    case BRAID_UNARY_LOG: return std::log(x);
    case BRAID_UNARY_SQRT: return std::sqrt(x);
    case BRAID_UNARY_RELU: return x > 0 ? x : 0.0;
    case BRAID_UNARY_SIGMOID: return 1.0 / (1.0 + std::exp(-x));
    case BRAID_UNARY_TANH: return std::tanh(x);
    case BRAID_UNARY_SQUARE: return x * x;
    case BRAID_UNARY_SIGN: return static_cast<double>((x > 0) - (x < 0));
    default: throw std::invalid_argument("ref::unary: bad op");
  }
}

double binary(braid_binary_op op, double a, double b) {
  switch (op) {
    case BRAID_BINARY_ADD: return a + b;
    case BRAID_BINARY_SUB: return a - b;
    case BRAID_BINARY_MUL: return a * b;
    case BRAID_BINARY_DIV: return a / b;
    case BRAID_BINARY_POW: return std::pow(a, b);
    case BRAID_BINARY_MAXIMUM: return std::max(a, b);
    case BRAID_BINARY_MINIMUM: return std::min(a, b);
    case BRAID_BINARY_EQUAL: return a == b ? 1.0 : 0.0;
    case BRAID_BINARY_LESS: return a < b ? 1.0 : 0.0;
    case BRAID_BINARY_GREATER: return a > b ? 1.0 : 0.0;
    // Python's: the remainder takes b's sign, the quotient is what is left divided exactly (an integer)
    case BRAID_BINARY_FLOOR_DIVIDE:
    case BRAID_BINARY_MOD: {
      if (b == 0) return op == BRAID_BINARY_MOD ? std::nan("") : a / b;
      double r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return op == BRAID_BINARY_MOD ? r : std::round((a - r) / b);
    }
    default: throw std::invalid_argument("ref::binary: bad op");
  }
}

Array unary(braid_unary_op op, const Array& x) {
  Array out = x;
  for (double& v : out.data) v = unary(op, v);
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right; a missing axis acts as size 1.
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("ref::broadcast: " + to_string(a) + " vs " + to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Index into `in` of the element that broadcasts to out index `idx`.
static std::vector<int64_t> broadcast_source(const Shape& in, std::span<const int64_t> idx) {
  const size_t lead = idx.size() - in.size();
  std::vector<int64_t> src(in.size());
  for (size_t i = 0; i < in.size(); ++i) src[i] = in[i] == 1 ? 0 : idx[lead + i];
  return src;
}

Array binary(braid_binary_op op, const Array& a, const Array& b) {
  Array out(broadcast_shapes(a.shape, b.shape));
  for_each_index(out.shape, [&](std::span<const int64_t> idx) {
    out.at(idx) = binary(op, a.at(broadcast_source(a.shape, idx)), b.at(broadcast_source(b.shape, idx)));
  });
  return out;
}

Array where(const Array& cond, const Array& a, const Array& b) {
  Array out(broadcast_shapes(broadcast_shapes(cond.shape, a.shape), b.shape));
  for_each_index(out.shape, [&](std::span<const int64_t> idx) {
    out.at(idx) = cond.at(broadcast_source(cond.shape, idx)) != 0.0 ? a.at(broadcast_source(a.shape, idx))
                                                                    : b.at(broadcast_source(b.shape, idx));
  });
  return out;
}

Array binary_scalar(braid_binary_op op, const Array& x, double s, bool reverse) {
  Array out = x;
  for (double& v : out.data) v = reverse ? binary(op, s, v) : binary(op, v, s);
  return out;
}

// ---- reductions ---------------------------------------------------------------------------------

static int32_t normalize_axis(int32_t axis, int64_t ndim) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) throw std::invalid_argument("ref: axis out of range");
  return static_cast<int32_t>(a);
}

Array reduce(braid_reduce_op op, const Array& x, std::vector<int32_t> axes, bool keepdims) {
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (int32_t a : axes) reduced[static_cast<size_t>(normalize_axis(a, x.ndim()))] = true;

  Shape kept = x.shape;  // keepdims shape: reduced axes have size 1
  for (size_t i = 0; i < kept.size(); ++i)
    if (reduced[i]) kept[i] = 1;
  const double count = static_cast<double>(x.numel()) / static_cast<double>(numel(kept));

  const double init = op == BRAID_REDUCE_MAX   ? -std::numeric_limits<double>::infinity()
                      : op == BRAID_REDUCE_MIN ? std::numeric_limits<double>::infinity()
                                               : 0.0;
  Array acc(kept, init);
  for_each_index(x.shape, [&](std::span<const int64_t> idx) {
    std::vector<int64_t> o(idx.begin(), idx.end());
    for (size_t i = 0; i < o.size(); ++i)
      if (reduced[i]) o[i] = 0;
    double& a = acc.at(o);
    const double v = x.at(idx);
    switch (op) {
      case BRAID_REDUCE_SUM:
      case BRAID_REDUCE_MEAN: a += v; break;
      case BRAID_REDUCE_MAX: a = std::max(a, v); break;
      case BRAID_REDUCE_MIN: a = std::min(a, v); break;
      case BRAID_REDUCE_NORM: a += v * v; break;
      default: throw std::invalid_argument("ref::reduce: bad op");
    }
  });
  for (double& a : acc.data) {
    if (op == BRAID_REDUCE_MEAN) a /= count;
    if (op == BRAID_REDUCE_NORM) a = std::sqrt(a);
  }
  if (!keepdims) {
    Shape dropped;
    for (size_t i = 0; i < kept.size(); ++i)
      if (!reduced[i]) dropped.push_back(kept[i]);
    acc.shape = dropped;
  }
  return acc;
}

Array argmax(const Array& x, int32_t axis, bool keepdims) {
  const auto ax = static_cast<size_t>(normalize_axis(axis, x.ndim()));
  Shape kept = x.shape;
  kept[ax] = 1;
  Array out(kept, -1.0);
  Array best(kept, -std::numeric_limits<double>::infinity());
  for_each_index(x.shape, [&](std::span<const int64_t> idx) {
    std::vector<int64_t> o(idx.begin(), idx.end());
    o[ax] = 0;
    // Strictly greater keeps the first index of the maximum (NumPy's rule).
    if (x.at(idx) > best.at(o) || out.at(o) < 0) {
      best.at(o) = x.at(idx);
      out.at(o) = static_cast<double>(idx[ax]);
    }
  });
  if (!keepdims) out.shape.erase(out.shape.begin() + static_cast<std::ptrdiff_t>(ax));
  return out;
}

// ---- linear algebra and layout ------------------------------------------------------------------

Array matmul(const Array& a, const Array& b, bool ta, bool tb) {
  if (a.ndim() < 2 || a.ndim() > 3 || b.ndim() < 2 || b.ndim() > 3)
    throw std::invalid_argument("ref::matmul: inputs must be 2-D or 3-D");
  const bool a3 = a.ndim() == 3, b3 = b.ndim() == 3;
  const int64_t ba = a3 ? a.shape[0] : 1, bb = b3 ? b.shape[0] : 1;
  // torch.matmul's batch broadcasting: a 2-D side or a batch of 1 is shared by every batch.
  if (a3 && b3 && ba != bb && ba != 1 && bb != 1) throw std::invalid_argument("ref::matmul: batch mismatch");
  const int64_t batch = !a3 ? bb : (!b3 || bb == 1 ? ba : bb);
  const int64_t ar = a.shape[a3 ? 1 : 0], ac = a.shape[a3 ? 2 : 1];
  const int64_t br = b.shape[b3 ? 1 : 0], bc = b.shape[b3 ? 2 : 1];
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac;
  const int64_t kb = tb ? bc : br, n = tb ? br : bc;
  if (k != kb) throw std::invalid_argument("ref::matmul: inner dimensions differ");

  Array out(a3 || b3 ? Shape{batch, m, n} : Shape{m, n});
  for (int64_t p = 0; p < batch; ++p) {
    const double* A = a.data.data() + (a3 && ba == batch ? p * ar * ac : 0);
    const double* B = b.data.data() + (b3 && bb == batch ? p * br * bc : 0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t t = 0; t < k; ++t) {
          const double av = ta ? A[t * ac + i] : A[i * ac + t];
          const double bv = tb ? B[j * bc + t] : B[t * bc + j];
          s += av * bv;
        }
        out.data[static_cast<size_t>((p * m + i) * n + j)] = s;
      }
  }
  return out;
}

Array reshape(const Array& x, Shape s) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1)
      infer = static_cast<int64_t>(i);
    else
      known *= s[i];
  }
  if (infer >= 0) s[static_cast<size_t>(infer)] = known == 0 ? 0 : x.numel() / known;
  return Array(s, x.data);  // throws when numel differs
}

Array slice(const Array& x, std::span<const int64_t> begin, std::span<const int64_t> end,
            std::span<const int64_t> step) {
  // Python's slice.indices for a positive step: negative bounds count from the end, then clamp to
  // [0, dim]; an empty range gives an empty axis.
  Shape s(x.shape.size());
  std::vector<int64_t> b(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t dim = x.shape[i], st = step.empty() ? 1 : step[i];
    const auto clamp = [dim](int64_t v) {
      return std::clamp<int64_t>(v < 0 ? std::max<int64_t>(v, -dim) + dim : v, 0, dim);
    };
    b[i] = clamp(begin[i]);
    const int64_t e = clamp(end[i]);
    s[i] = e > b[i] ? (e - b[i] - 1) / st + 1 : 0;
  }
  Array out(s);
  for_each_index(s, [&](std::span<const int64_t> idx) {
    std::vector<int64_t> src(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) src[i] = b[i] + idx[i] * (step.empty() ? 1 : step[i]);
    out.at(idx) = x.at(src);
  });
  return out;
}

Array transpose(const Array& x, std::span<const int32_t> perm) {
  Shape s(x.shape.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = x.shape[static_cast<size_t>(perm[i])];
  Array out(s);
  for_each_index(s, [&](std::span<const int64_t> idx) {
    std::vector<int64_t> src(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) src[static_cast<size_t>(perm[i])] = idx[i];
    out.at(idx) = x.at(src);
  });
  return out;
}

Array concat(std::span<const Array> xs, int32_t axis) {
  const auto ax = static_cast<size_t>(normalize_axis(axis, xs[0].ndim()));
  Shape s = xs[0].shape;
  s[ax] = 0;
  for (const Array& x : xs) s[ax] += x.shape[ax];
  Array out(s);
  int64_t base = 0;
  for (const Array& x : xs) {
    for_each_index(x.shape, [&](std::span<const int64_t> idx) {
      std::vector<int64_t> dst(idx.begin(), idx.end());
      dst[ax] += base;
      out.at(dst) = x.at(idx);
    });
    base += x.shape[ax];
  }
  return out;
}

// ---- optimizer updates --------------------------------------------------------------------------

void sgd_update(Array& w, const Array& g, double lr, double wd) {
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] -= lr * (g.data[i] + wd * w.data[i]);
}

void sgd_momentum_update(Array& w, const Array& g, Array& mom, double lr, double momentum, double wd) {
  for (size_t i = 0; i < w.data.size(); ++i) {
    mom.data[i] = momentum * mom.data[i] - lr * (g.data[i] + wd * w.data[i]);
    w.data[i] += mom.data[i];
  }
}

void adam_update(Array& w, const Array& g, Array& m, Array& v, double lr, double beta1, double beta2, double eps,
                 double wd, int64_t step) {
  const double c1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double c2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  for (size_t i = 0; i < w.data.size(); ++i) {
    const double gi = g.data[i] + wd * w.data[i];
    m.data[i] = beta1 * m.data[i] + (1.0 - beta1) * gi;
    v.data[i] = beta2 * v.data[i] + (1.0 - beta2) * gi * gi;
    w.data[i] -= lr * (m.data[i] / c1) / (std::sqrt(v.data[i] / c2) + eps);
  }
}

}  // namespace ref
