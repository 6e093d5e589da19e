// FILL, ARANGE, RANDOM_*, COPY, UNARY, BINARY(_SCALAR), DROPOUT and the optimizer updates: one thread
// per element (grid-stride), strided operands through Idx. The op code is a kernel argument switched
// on inside the kernel (uniform across the grid, so no divergence) rather than a template parameter:
// that keeps the instantiations, and nvcc's time, down to one per dtype.
#include "common.cuh"
#include "float_ops.cuh"
#include "launch.h"

namespace braid::cuda::kern {
namespace {

// ---- FILL / ARANGE / COPY ----

template <class T>
__global__ void fill_k(Idx<1> ix, int64_t n, T* o, double v) {
  const T t = cvt<T>(v);
  BRAID_GRID_LOOP(i, n) {
    int64_t off[1];
    ix.at(i, off);
    o[off[0]] = t;
  }
}

template <class T>
__global__ void arange_k(Idx<1> ix, int64_t n, T* o, double start, double step) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[1];
    ix.at(i, off);
    if constexpr (std::is_integral_v<T>) {  // exactly, wrapping: the host checked every value fits
      const auto first = static_cast<unsigned long long>(static_cast<long long>(start));
      const auto stride = static_cast<unsigned long long>(static_cast<long long>(step));
      o[off[0]] = static_cast<T>(first + static_cast<unsigned long long>(i) * stride);
    } else {
      o[off[0]] = cvt<T>(__dadd_rn(start, __dmul_rn(double(i), step)));  // unfused, as the CPU backend
    }
  }
}

template <class To, class From>
__global__ void copy_k(Idx<2> ix, int64_t n, To* o, const From* a) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[2];
    ix.at(i, off);
    o[off[0]] = cvt<To>(a[off[1]]);
  }
}

Idx<1> idx1(const braid_buffer_view& v, int64_t& n) {
  Idx<1> ix;
  const int64_t* st[1] = {v.strides};
  n = make_idx(ix, v.ndim, v.shape, st);
  return ix;
}

// ---- Philox-4x32-10 (braid_backend.h) ----

struct Words {
  uint32_t w[4];
};

__device__ __forceinline__ Words philox(uint64_t seed, uint64_t draw, uint64_t j) {
  uint32_t c0 = uint32_t(j), c1 = uint32_t(j >> 32), c2 = uint32_t(draw), c3 = uint32_t(draw >> 32);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
  }
  return Words{{c0, c1, c2, c3}};
}

__device__ __forceinline__ double unit(uint32_t w) { return (double(w) + 0.5) * 0x1p-32; }

// RANDOM_NORMAL must give the CPU backend's bits (a conformance test compares them exactly), so its
// log, cos and sin are the CPU's own functions (backends/cpu/kernels/vmath.h log_f64_normal, random.cpp
// sincos_2pi; the Vulkan backend's random_normal.comp does the same), operation for operation. Every
// product and sum is an explicitly rounded intrinsic: nvcc never contracts those into an FMA, and the
// CPU file is built with -ffp-contract=off, so each operation rounds once on both, in the same order.
__device__ __forceinline__ double rn_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double rn_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double rn_sub(double a, double b) { return __dsub_rn(a, b); }

// c[0] + z (c[1] + z (... + z c[N-1])): fdlibm's Horner form, innermost product first.
template <int N>
__device__ __forceinline__ double horner(double z, const double (&c)[N]) {
  double p = c[N - 1];
  for (int k = N - 2; k >= 0; --k) p = rn_add(c[k], rn_mul(z, p));
  return p;
}

// fdlibm's __ieee754_log for a positive normal x: x = 2^k (1 + f), sqrt(1/2) <= 1 + f < sqrt(2),
// log(1 + f) = f - hfsq + s (hfsq + R) with s = f / (2 + f). No special cases (u is in (0, 1)).
__device__ __forceinline__ double log_f64_normal(double x) {
  const uint64_t bits = uint64_t(__double_as_longlong(x));
  int32_t hx = int32_t(bits >> 32);
  int32_t k = (hx >> 20) - 1023;
  hx &= 0x000fffff;
  const int32_t i = (hx + 0x95f64) & 0x100000;  // mantissa >= sqrt(2): halve it, k + 1
  k += i >> 20;
  const uint64_t fbits = (uint64_t(uint32_t(hx | (i ^ 0x3ff00000))) << 32) | (bits & 0xffffffffu);
  const double f = rn_sub(__longlong_as_double((long long)fbits), 1.0);
  const double s = __ddiv_rn(f, rn_add(2.0, f)), dk = double(k), z = rn_mul(s, s), w = rn_mul(z, z);
  const double t1 =
      rn_mul(w, horner(w, {3.999999999940941908e-01, 2.222219843214978396e-01, 1.531383769920937332e-01}));
  const double t2 = rn_mul(z, horner(w, {6.666666666666735130e-01, 2.857142874366239149e-01, 1.818357216161805012e-01,
                                         1.479819860511658591e-01}));
  const double hfsq = rn_mul(rn_mul(0.5, f), f), R = rn_add(t1, t2);
  // dk ln2_hi - ((hfsq - (s (hfsq + R) + dk ln2_lo)) - f)
  return rn_sub(rn_mul(dk, 6.93147180369123816490e-01),
                rn_sub(rn_sub(hfsq, rn_add(rn_mul(s, rn_add(hfsq, R)), rn_mul(dk, 1.90821492927058770002e-10))), f));
}

// cos and sin of 2 pi u, u in (0, 1): the quadrant exactly from u (4u is exact; rint rounds half to
// even, as the CPU's nearbyint), then fdlibm's __kernel_sin/__kernel_cos on |a| <= pi/4.
__device__ __forceinline__ void sincos_2pi(double u, double& c, double& s) {
  const double qd = rint(4.0 * u);  // 0..4; 4 wraps to 0
  const int q = int(qd) & 3;
  const double a = rn_mul(rn_sub(u, rn_mul(0.25, qd)), 2.0 * 3.14159265358979323846);  // 2 * (pi in double)
  const double z = rn_mul(a, a);
  const double sr =
      rn_mul(z, horner(z, {8.33333333332248946124e-03, -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                           -2.50507602534068634195e-08, 1.58969099521155010221e-10}));
  const double sn = rn_add(a, rn_mul(rn_mul(a, z), rn_add(-1.66666666666666324348e-01, sr)));
  const double cr =
      rn_mul(z, horner(z, {4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
                           -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11}));
  const double hz = rn_mul(0.5, z), w = rn_sub(1.0, hz);
  const double cs = rn_add(w, rn_add(rn_sub(rn_sub(1.0, w), hz), rn_mul(z, cr)));
  // cos(q pi/2 + a), sin(q pi/2 + a)
  c = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
  s = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
}

// One thread per Philox block: 4 uniform elements or 2 normal ones.
template <class T>
__global__ void random_k(Idx<1> ix, int64_t n, T* o, uint64_t seed, uint64_t draw, bool normal, double a, double b) {
  const int per = normal ? 2 : 4;
  const int64_t blocks = (n + per - 1) / per;
  BRAID_GRID_LOOP(j, blocks) {
    const Words w = philox(seed, draw, uint64_t(j));
    double v[4];
    if (normal) {
      // As the CPU's normal_window: r = sqrt(-2 log u1) (IEEE sqrt on both), then a + b (r cos) and
      // a + b (r sin), each operation rounded on its own.
      const double r = __dsqrt_rn(rn_mul(-2.0, log_f64_normal(unit(w.w[0]))));
      double cs, sn;
      sincos_2pi(unit(w.w[1]), cs, sn);
      v[0] = rn_add(a, rn_mul(b, rn_mul(r, cs)));
      v[1] = rn_add(a, rn_mul(b, rn_mul(r, sn)));
    } else {
      const double span = b - a;
      for (int k = 0; k < 4; ++k) v[k] = __dadd_rn(a, __dmul_rn(span, unit(w.w[k])));
    }
    for (int k = 0; k < per; ++k) {
      const int64_t i = j * per + k;
      if (i >= n) break;
      int64_t off[1];
      ix.at(i, off);
      o[off[0]] = T(v[k]);
    }
  }
}

// Keep element i when its uniform u_i >= p (the CPU backend's exact integer form of the same test).
template <class T>
__global__ void dropout_k(Idx<3> ix, int64_t n, T* y, T* m, const T* x, uint64_t seed, uint64_t draw, uint64_t thr,
                          double scale) {
  const int64_t blocks = (n + 3) / 4;
  BRAID_GRID_LOOP(j, blocks) {
    const Words w = philox(seed, draw, uint64_t(j));
    for (int k = 0; k < 4; ++k) {
      const int64_t i = j * 4 + k;
      if (i >= n) break;
      int64_t off[3];
      ix.at(i, off);
      const bool keep = uint64_t(w.w[k]) >= thr;
      const T xv = x[off[2]];
      if (m != nullptr) m[off[1]] = keep ? T(1) : T(0);
      y[off[0]] = keep ? T(double(xv) * scale) : T(__dmul_rn(double(xv), 0.0));  // NaN at inf/NaN, as PyTorch
    }
  }
}

// ---- UNARY / BINARY ----

// float_ops.cuh numbers the ops itself (NVRTC compiles it without braid_backend.h).
static_assert(BRAID_UNARY_NEG == 0 && BRAID_UNARY_ABS == 1 && BRAID_UNARY_EXP == 2 && BRAID_UNARY_LOG == 3 &&
              BRAID_UNARY_SQRT == 4 && BRAID_UNARY_RELU == 5 && BRAID_UNARY_SIGMOID == 6 && BRAID_UNARY_TANH == 7 &&
              BRAID_UNARY_SQUARE == 8 && BRAID_UNARY_SIGN == 9 && BRAID_UNARY_COUNT == 10);
static_assert(BRAID_BINARY_ADD == 0 && BRAID_BINARY_SUB == 1 && BRAID_BINARY_MUL == 2 && BRAID_BINARY_DIV == 3 &&
              BRAID_BINARY_POW == 4 && BRAID_BINARY_MAXIMUM == 5 && BRAID_BINARY_MINIMUM == 6 &&
              BRAID_BINARY_EQUAL == 7 && BRAID_BINARY_LESS == 8 && BRAID_BINARY_GREATER == 9 &&
              BRAID_BINARY_FLOOR_DIVIDE == 10 && BRAID_BINARY_MOD == 11 && BRAID_BINARY_COUNT == 12);

template <class T>
__device__ __forceinline__ T unary_op(int op, T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case BRAID_UNARY_NEG: return T(U(0) - U(x));
      case BRAID_UNARY_ABS: return x < 0 ? T(U(0) - U(x)) : x;
      case BRAID_UNARY_RELU: return x < 0 ? T(0) : x;
      case BRAID_UNARY_SQUARE: return T(U(x) * U(x));
      default: return T((x > 0) - (x < 0));  // SIGN (the host validated the op)
    }
  } else {
    return braid_float_unary(op, x);
  }
}

template <class T>
__global__ void unary_k(Idx<2> ix, int64_t n, T* o, const T* a, int op) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[2];
    ix.at(i, off);
    o[off[0]] = unary_op<T>(op, a[off[1]]);
  }
}

template <class T>
__device__ __forceinline__ T binary_op(int op, T x, T y, int* flag) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case BRAID_BINARY_ADD: return T(U(x) + U(y));
      case BRAID_BINARY_SUB: return T(U(x) - U(y));
      case BRAID_BINARY_MUL: return T(U(x) * U(y));
      case BRAID_BINARY_DIV:
        if (y == 0) {
          if (flag) *flag = kErrIntDivZero;
          return 0;
        }
        return y == -1 ? T(U(0) - U(x)) : T(x / y);
      case BRAID_BINARY_POW: {
        if (y < 0) {
          if (x == 0 && flag) *flag = kErrIntPowZero;
          return x == 1 ? T(1) : x == -1 ? T((y & 1) ? -1 : 1) : T(0);
        }
        U r = 1, base = U(x);
        for (T e = y; e != 0; e >>= 1, base *= base)
          if (e & 1) r *= base;
        return T(r);
      }
      case BRAID_BINARY_MAXIMUM: return x > y ? x : y;
      case BRAID_BINARY_MINIMUM: return x < y ? x : y;
      case BRAID_BINARY_EQUAL: return x == y ? T(1) : T(0);
      case BRAID_BINARY_LESS: return x < y ? T(1) : T(0);
      case BRAID_BINARY_FLOOR_DIVIDE:
      case BRAID_BINARY_MOD: {  // Python's: toward -inf, the remainder with y's sign
        if (y == 0) {
          if (flag) *flag = kErrIntDivZero;
          return 0;
        }
        if (y == -1) return op == BRAID_BINARY_MOD ? T(0) : T(U(0) - U(x));
        const T q = T(x / y), r = T(x % y);
        const bool adjust = r != 0 && ((r < 0) != (y < 0));
        return op == BRAID_BINARY_MOD ? (adjust ? T(r + y) : r) : (adjust ? T(q - 1) : q);
      }
      default: return x > y ? T(1) : T(0);
    }
  } else {
    return braid_float_binary(op, x, y);
  }
}

// scalar_side: 0 = both operands are tensors, 1 = a is the scalar s, 2 = b is.
template <class T>
__global__ void binary_k(Idx<3> ix, int64_t n, T* o, const T* a, const T* b, T s, int scalar_side, int op, int* flag) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[3];
    ix.at(i, off);
    const T x = scalar_side == 1 ? s : a[off[1]];
    const T y = scalar_side == 2 ? s : b[off[2]];
    o[off[0]] = binary_op<T>(op, x, y, flag);
  }
}

// ---- WHERE: out = cond != 0 ? a : b (a NaN cond is nonzero); a and b are only copied, so an inf or
// NaN in the operand not selected never reaches out ----

template <class T>
__global__ void where_k(Idx<4> ix, int64_t n, T* o, const T* cond, const T* a, const T* b) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[4];
    ix.at(i, off);
    o[off[0]] = cond[off[1]] != T(0) ? a[off[2]] : b[off[3]];
  }
}

// ---- optimizer updates (formulas as the CPU backend, arithmetic in the parameter dtype) ----

template <class T>
__global__ void sgd_k(Idx<2> ix, int64_t n, T* w, const T* g, T lr, T wd) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[2];
    ix.at(i, off);
    T& wv = w[off[0]];
    wv -= lr * (g[off[1]] + wd * wv);
  }
}

template <class T>
__global__ void momentum_k(Idx<3> ix, int64_t n, T* w, const T* g, T* m, T lr, T mu, T wd) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[3];
    ix.at(i, off);
    T& wv = w[off[0]];
    T& mv = m[off[2]];
    mv = mu * mv - lr * (g[off[1]] + wd * wv);
    wv += mv;
  }
}

template <class T>
__global__ void adam_k(Idx<4> ix, int64_t n, T* w, const T* g, T* m, T* v, T lr, T b1, T b2, T one_b1, T one_b2, T c1,
                       T c2, T eps, T wd) {
  BRAID_GRID_LOOP(i, n) {
    int64_t off[4];
    ix.at(i, off);
    T& wv = w[off[0]];
    T& mv = m[off[2]];
    T& vv = v[off[3]];
    const T gd = g[off[1]] + wd * wv;
    mv = b1 * mv + one_b1 * gd;
    vv = b2 * vv + one_b2 * gd * gd;
    wv -= lr * (mv * c1) / (sqrt(vv * c2) + eps);
  }
}

}  // namespace

braid_status fill(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto& o = c.outputs[0];
  int64_t n;
  Idx<1> ix = idx1(o, n);
  if (n == 0) return BRAID_OK;
  visit_all(o.dtype, [&](auto t) {
    using T = decltype(t);
    fill_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), c.f[0]);
  });
  return launched("fill", msg);
}

braid_status arange(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto& o = c.outputs[0];
  int64_t n;
  Idx<1> ix = idx1(o, n);
  if (n == 0) return BRAID_OK;
  visit_numeric(o.dtype, [&](auto t) {
    using T = decltype(t);
    arange_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), c.f[0], c.f[1]);
  });
  return launched("arange", msg);
}

braid_status random(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto& o = c.outputs[0];
  int64_t n;
  Idx<1> ix = idx1(o, n);
  if (n == 0) return BRAID_OK;
  const bool normal = c.op == BRAID_KOP_RANDOM_NORMAL;
  const int64_t blocks = (n + (normal ? 1 : 3)) / (normal ? 2 : 4);
  visit_float(o.dtype, [&](auto t) {
    using T = decltype(t);
    random_k<T><<<blocks_for(blocks), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), uint64_t(c.i[0]), uint64_t(c.i[1]),
                                                                 normal, c.f[0], c.f[1]);
  });
  return launched(normal ? "random_normal" : "random_uniform", msg);
}

braid_status copy_views(const braid_buffer_view& src, const braid_buffer_view& dst, cudaStream_t stream,
                        std::string& msg) {
  Idx<2> ix;
  const int64_t* st[2] = {dst.strides, src.strides};
  const int64_t n = make_idx(ix, dst.ndim, dst.shape, st);
  if (n == 0) return BRAID_OK;
  visit_all(dst.dtype, [&](auto to) {
    using To = decltype(to);
    visit_all(src.dtype, [&](auto from) {
      using From = decltype(from);
      copy_k<To, From><<<blocks_for(n), kThreads, 0, stream>>>(ix, n, ptr<To>(dst), ptr<const From>(src));
    });
  });
  return launched("copy", msg);
}

braid_status copy(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  return copy_views(c.inputs[0], c.outputs[0], env.stream, msg);
}

braid_status unary(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &in = c.inputs[0], &o = c.outputs[0];
  const int op = int(c.i[0]);
  // Which unary ops take integers is said once, in call_supports (dispatch.cpp), which launch_kernel
  // asked before this.
  Idx<2> ix;
  const int64_t* st[2] = {o.strides, in.strides};
  const int64_t n = make_idx(ix, o.ndim, o.shape, st);
  if (n == 0) return BRAID_OK;
  visit_numeric(in.dtype, [&](auto t) {
    using T = decltype(t);
    unary_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), ptr<const T>(in), op);
  });
  return launched("unary", msg);
}

namespace {
braid_status binary_any(const braid_kernel_call& c, KernelEnv& env, std::string& msg, bool scalar) {
  const auto& o = c.outputs[0];
  const int op = int(c.i[0]);
  if (op < 0 || op >= BRAID_BINARY_COUNT) {
    msg = "cuda backend: binary op " + std::to_string(op) + " is not implemented";
    return BRAID_ERR_UNSUPPORTED;
  }
  static constexpr int64_t zeros[BRAID_MAX_DIMS] = {};
  const bool reverse = scalar && c.i[1] != 0;
  const braid_buffer_view& a = c.inputs[0];
  const int64_t* sa = scalar ? (reverse ? zeros : a.strides) : a.strides;
  const int64_t* sb = scalar ? (reverse ? a.strides : zeros) : c.inputs[1].strides;
  Idx<3> ix;
  const int64_t* st[3] = {o.strides, sa, sb};
  const int64_t n = make_idx(ix, o.ndim, o.shape, st);
  if (n == 0) return BRAID_OK;
  visit_numeric(a.dtype, [&](auto t) {
    using T = decltype(t);
    const T* pa = ptr<const T>(a);
    const T* pb = scalar ? pa : ptr<const T>(c.inputs[1]);
    const T s = scalar ? cvt<T>(c.f[0]) : T(0);
    const int side = scalar ? (reverse ? 1 : 2) : 0;
    binary_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), pa, pb, s, side, op, env.error_flag);
  });
  return launched(scalar ? "binary_scalar" : "binary", msg);
}
}  // namespace

braid_status binary(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  return binary_any(c, env, msg, false);
}
braid_status binary_scalar(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  return binary_any(c, env, msg, true);
}

braid_status where(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &cond = c.inputs[0], &a = c.inputs[1], &b = c.inputs[2], &o = c.outputs[0];
  Idx<4> ix;
  const int64_t* st[4] = {o.strides, cond.strides, a.strides, b.strides};
  const int64_t n = make_idx(ix, o.ndim, o.shape, st);
  if (n == 0) return BRAID_OK;
  visit_numeric(cond.dtype, [&](auto t) {  // the call's dtype (call_dtype), which supports() checked
    using T = decltype(t);
    where_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(o), ptr<const T>(cond), ptr<const T>(a),
                                                           ptr<const T>(b));
  });
  return launched("where", msg);
}

braid_status dropout(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &x = c.inputs[0], &y = c.outputs[0];
  const bool has_mask = c.num_outputs >= 2;
  const auto& m = has_mask ? c.outputs[1] : y;
  const double p = c.f[0];
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const uint64_t thr = p <= 0.0 ? 0 : p >= 1.0 ? (uint64_t{1} << 32) : uint64_t(std::ceil(std::ldexp(p, 32) - 0.5));
  Idx<3> ix;
  const int64_t* st[3] = {y.strides, m.strides, x.strides};
  const int64_t n = make_idx(ix, y.ndim, y.shape, st);
  if (n == 0) return BRAID_OK;
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    dropout_k<T><<<blocks_for((n + 3) / 4), kThreads, 0, env.stream>>>(ix, n, ptr<T>(y), has_mask ? ptr<T>(m) : nullptr,
                                                                       ptr<const T>(x), uint64_t(c.i[0]),
                                                                       uint64_t(c.i[1]), thr, scale);
  });
  return launched("dropout", msg);
}

braid_status sgd(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &w = c.inputs[0], &g = c.inputs[1];
  Idx<2> ix;
  const int64_t* st[2] = {w.strides, g.strides};
  const int64_t n = make_idx(ix, w.ndim, w.shape, st);
  if (n == 0) return BRAID_OK;
  visit_float(w.dtype, [&](auto t) {
    using T = decltype(t);
    sgd_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(w), ptr<const T>(g), T(c.f[0]), T(c.f[1]));
  });
  return launched("sgd_update", msg);
}

braid_status sgd_momentum(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &w = c.inputs[0], &g = c.inputs[1], &m = c.inputs[2];
  Idx<3> ix;
  const int64_t* st[3] = {w.strides, g.strides, m.strides};
  const int64_t n = make_idx(ix, w.ndim, w.shape, st);
  if (n == 0) return BRAID_OK;
  visit_float(w.dtype, [&](auto t) {
    using T = decltype(t);
    momentum_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(w), ptr<const T>(g), ptr<T>(m), T(c.f[0]),
                                                              T(c.f[1]), T(c.f[2]));
  });
  return launched("sgd_momentum", msg);
}

braid_status adam(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &w = c.inputs[0], &g = c.inputs[1], &m = c.inputs[2], &v = c.inputs[3];
  Idx<4> ix;
  const int64_t* st[4] = {w.strides, g.strides, m.strides, v.strides};
  const int64_t n = make_idx(ix, w.ndim, w.shape, st);
  if (n == 0) return BRAID_OK;
  const double b1 = c.f[1], b2 = c.f[2];
  const double t = double(c.i[0] > 1 ? c.i[0] : 1);
  const double corr1 = 1.0 / (1.0 - std::pow(b1, t)), corr2 = 1.0 / (1.0 - std::pow(b2, t));
  visit_float(w.dtype, [&](auto tag) {
    using T = decltype(tag);
    adam_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(ix, n, ptr<T>(w), ptr<const T>(g), ptr<T>(m), ptr<T>(v),
                                                          T(c.f[0]), T(b1), T(b2), T(1.0 - b1), T(1.0 - b2), T(corr1),
                                                          T(corr2), T(c.f[3]), T(c.f[4]));
  });
  return launched("adam_update", msg);
}

}  // namespace braid::cuda::kern
