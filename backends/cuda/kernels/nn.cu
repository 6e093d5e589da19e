// CONV2D (+ backward), POOL2D (+ backward), BATCH_NORM (+ backward), SOFTMAX, SOFTMAX_CE (+ backward).
// Own kernels, written for clarity and exactness first (direct convolution: a thread per output
// element, a block per weight for the weight gradient): see backends/cuda/README.md for why not
// cuDNN, and for what is not yet verified on hardware. REDUCE and ARGMAX are in reduce.cu.
#include "common.cuh"
#include "device.h"
#include "launch.h"

namespace braid::cuda::kern {
namespace {

// ---- 4-D strided access for NCHW tensors ----
struct T4 {
  int64_t n, c, h, w;      // shape
  int64_t sn, sc, sh, sw;  // element strides
};
inline T4 t4(const braid_buffer_view& v) {
  return {v.shape[0], v.shape[1], v.shape[2], v.shape[3], v.strides[0], v.strides[1], v.strides[2], v.strides[3]};
}
__device__ __forceinline__ int64_t at4(const T4& t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t.sn + b * t.sc + c * t.sh + d * t.sw;
}
struct Geo {
  int64_t sh, sw, ph, pw;  // stride, padding
};

// Convolution: one thread per output. The three convolution kernels sum one long sequential chain
// (C R S terms here, N P Q in the weight gradient), so they accumulate in acc_t<T> (double for float32)
// and round once at the store: in float32 the chain's rounding error would grow with its length, where
// the CPU backend sums in short float runs and double partials.
template <class T>
__global__ void conv_k(T4 xs, const T* x, T4 ws, const T* w, const T* bias, int64_t bs, T4 ys, T* y, Geo g) {
  using A = acc_t<T>;
  const int64_t n = ys.n * ys.c * ys.h * ys.w;
  BRAID_GRID_LOOP(e, n) {
    const int64_t q = e % ys.w, p = e / ys.w % ys.h, k = e / (ys.w * ys.h) % ys.c, b = e / (ys.w * ys.h * ys.c);
    A acc = bias != nullptr ? A(bias[k * bs]) : A(0);
    for (int64_t c = 0; c < xs.c; ++c)
      for (int64_t r = 0; r < ws.h; ++r) {
        const int64_t h = p * g.sh - g.ph + r;
        if (h < 0 || h >= xs.h) continue;
        for (int64_t s = 0; s < ws.w; ++s) {
          const int64_t wi = q * g.sw - g.pw + s;
          if (wi < 0 || wi >= xs.w) continue;
          acc += A(x[at4(xs, b, c, h, wi)]) * A(w[at4(ws, k, c, r, s)]);
        }
      }
    y[at4(ys, b, k, p, q)] = T(acc);
  }
}

// dx[n,c,h,w] = sum over k, r, s with h = p*sh - ph + r (p integral, in range) of dy[n,k,p,q] w[k,c,r,s].
template <class T>
__global__ void conv_bwd_data_k(T4 dys, const T* dy, T4 ws, const T* w, T4 dxs, T* dx, Geo g) {
  using A = acc_t<T>;
  const int64_t n = dxs.n * dxs.c * dxs.h * dxs.w;
  BRAID_GRID_LOOP(e, n) {
    const int64_t wi = e % dxs.w, h = e / dxs.w % dxs.h, c = e / (dxs.w * dxs.h) % dxs.c,
                  b = e / (dxs.w * dxs.h * dxs.c);
    A acc = A(0);
    for (int64_t r = 0; r < ws.h; ++r) {
      const int64_t ph = h + g.ph - r;
      if (ph < 0 || ph % g.sh != 0 || ph / g.sh >= dys.h) continue;
      for (int64_t s = 0; s < ws.w; ++s) {
        const int64_t pw = wi + g.pw - s;
        if (pw < 0 || pw % g.sw != 0 || pw / g.sw >= dys.w) continue;
        for (int64_t k = 0; k < dys.c; ++k)
          acc += A(dy[at4(dys, b, k, ph / g.sh, pw / g.sw)]) * A(w[at4(ws, k, c, r, s)]);
      }
    }
    dx[at4(dxs, b, c, h, wi)] = T(acc);
  }
}

// dw[k,c,r,s] = sum over n, p, q of dy[n,k,p,q] x[n,c,p*sh-ph+r,q*sw-pw+s]. Two kernels, as REDUCE
// has: a long chain (more than kWeightChainPerThread terms) gets a block per weight, its threads
// striding over (n, p, q) and summed by block_reduce's fixed tree, so the result repeats run to run;
// one thread per weight was LeNet's bottleneck on an H100, where its first layer has 180 weights of
// 173,056 terms each. A short chain keeps a thread per weight (a block would leave most of its threads
// idle: a 512x512x3x3 layer over one 7x7 image has 2.4 million weights of 49 terms).
inline constexpr int64_t kWeightChainPerThread = 4 * kThreads;

template <class T>
__global__ void conv_bwd_weight_thread_k(T4 dys, const T* dy, T4 xs, const T* x, T4 dws, T* dw, Geo g) {
  using A = acc_t<T>;
  const int64_t n = dws.n * dws.c * dws.h * dws.w;
  BRAID_GRID_LOOP(e, n) {
    const int64_t s = e % dws.w, r = e / dws.w % dws.h, c = e / (dws.w * dws.h) % dws.c,
                  k = e / (dws.w * dws.h * dws.c);
    A acc = A(0);
    for (int64_t b = 0; b < dys.n; ++b)
      for (int64_t p = 0; p < dys.h; ++p) {
        const int64_t h = p * g.sh - g.ph + r;
        if (h < 0 || h >= xs.h) continue;
        for (int64_t q = 0; q < dys.w; ++q) {
          const int64_t wi = q * g.sw - g.pw + s;
          if (wi < 0 || wi >= xs.w) continue;
          acc += A(dy[at4(dys, b, k, p, q)]) * A(x[at4(xs, b, c, h, wi)]);
        }
      }
    dw[at4(dws, k, c, r, s)] = T(acc);
  }
}

template <class T>
__global__ void conv_bwd_weight_k(T4 dys, const T* dy, T4 xs, const T* x, T4 dws, T* dw, Geo g) {
  using A = acc_t<T>;
  const int64_t n = dws.n * dws.c * dws.h * dws.w, terms = dys.n * dys.h * dys.w;
  for (int64_t e = blockIdx.x; e < n; e += gridDim.x) {
    const int64_t s = e % dws.w, r = e / dws.w % dws.h, c = e / (dws.w * dws.h) % dws.c,
                  k = e / (dws.w * dws.h * dws.c);
    A acc = A(0);
    for (int64_t t = threadIdx.x; t < terms; t += blockDim.x) {
      const int64_t q = t % dys.w, p = t / dys.w % dys.h, b = t / (dys.w * dys.h);
      const int64_t h = p * g.sh - g.ph + r, wi = q * g.sw - g.pw + s;
      if (h < 0 || h >= xs.h || wi < 0 || wi >= xs.w) continue;
      acc += A(dy[at4(dys, b, k, p, q)]) * A(x[at4(xs, b, c, h, wi)]);
    }
    acc = block_reduce(acc, [](A a, A b) { return a + b; });
    if (threadIdx.x == 0) dw[at4(dws, k, c, r, s)] = T(acc);
  }
}

struct Win {
  int64_t kh, kw, sh, sw, ph, pw;
  bool max;
};

// The window of output (p, q): its first maximum (row-major, padded cells ignored) or its average.
template <class T>
__device__ __forceinline__ T pool_window(const T* x, const T4& xs, int64_t b, int64_t c, int64_t p, int64_t q,
                                         const Win& wd, int64_t* arg_h, int64_t* arg_w, int64_t* count) {
  T best = T(0);
  double sum = 0;
  int64_t cnt = 0;
  // The window clipped to the image: a kernel far larger than the image scans only the cells it has.
  const int64_t h0 = p * wd.sh - wd.ph, w0 = q * wd.sw - wd.pw;
  const int64_t hs = max(h0, int64_t(0)), he = min(h0 + wd.kh, xs.h);
  const int64_t ws = max(w0, int64_t(0)), we = min(w0 + wd.kw, xs.w);
  for (int64_t h = hs; h < he; ++h) {
    for (int64_t w = ws; w < we; ++w) {
      const T v = x[at4(xs, b, c, h, w)];
      if (wd.max) {
        if (cnt == 0 || v > best || (v != v && best == best)) {
          best = v;
          *arg_h = h;
          *arg_w = w;
        }
      } else {
        sum += double(v);
      }
      ++cnt;
    }
  }
  *count = cnt;
  if (wd.max) return cnt > 0 ? best : T(-INFINITY);
  return cnt > 0 ? T(sum / double(cnt)) : T(0);
}

template <class T>
__global__ void pool_k(T4 xs, const T* x, T4 ys, T* y, Win wd) {
  const int64_t n = ys.n * ys.c * ys.h * ys.w;
  BRAID_GRID_LOOP(e, n) {
    const int64_t q = e % ys.w, p = e / ys.w % ys.h, c = e / (ys.w * ys.h) % ys.c, b = e / (ys.w * ys.h * ys.c);
    int64_t ah = -1, aw = -1, cnt = 0;
    y[at4(ys, b, c, p, q)] = pool_window(x, xs, b, c, p, q, wd, &ah, &aw, &cnt);
  }
}

// One thread per dx element, gathering from the windows that contain it (no atomics, deterministic).
template <class T>
__global__ void pool_bwd_k(T4 dys, const T* dy, T4 xs, const T* x, T4 dxs, T* dx, Win wd) {
  const int64_t n = dxs.n * dxs.c * dxs.h * dxs.w;
  BRAID_GRID_LOOP(e, n) {
    const int64_t w = e % dxs.w, h = e / dxs.w % dxs.h, c = e / (dxs.w * dxs.h) % dxs.c,
                  b = e / (dxs.w * dxs.h * dxs.c);
    // Windows p with p*sh - ph <= h <= p*sh - ph + kh - 1.
    const int64_t p0 = max(int64_t(0), (h + wd.ph - wd.kh + wd.sh) / wd.sh), p1 = min(dys.h - 1, (h + wd.ph) / wd.sh);
    const int64_t q0 = max(int64_t(0), (w + wd.pw - wd.kw + wd.sw) / wd.sw), q1 = min(dys.w - 1, (w + wd.pw) / wd.sw);
    T acc = T(0);
    for (int64_t p = p0; p <= p1; ++p)
      for (int64_t q = q0; q <= q1; ++q) {
        if (h < p * wd.sh - wd.ph || h > p * wd.sh - wd.ph + wd.kh - 1) continue;
        if (w < q * wd.sw - wd.pw || w > q * wd.sw - wd.pw + wd.kw - 1) continue;
        int64_t ah = -1, aw = -1, cnt = 0;
        if (wd.max) {
          pool_window(x, xs, b, c, p, q, wd, &ah, &aw, &cnt);
          if (ah == h && aw == w) acc += dy[at4(dys, b, c, p, q)];
        } else {
          pool_window(x, xs, b, c, p, q, wd, &ah, &aw, &cnt);
          if (cnt > 0) acc += dy[at4(dys, b, c, p, q)] / T(cnt);
        }
      }
    dx[at4(dxs, b, c, h, w)] = acc;
  }
}

// ---- BATCH_NORM: channel axis 1; element (n, c, l) of x is logical index (n*C + c)*L + l ----
struct Bn {
  int64_t N, C, L;
};

// One block per channel: mean and 1/sqrt(var + eps) in double (scratch), written to save_* too; in
// training the running statistics are updated in place (unbiased variance).
template <class T>
__global__ void bn_stats_k(Idx<1> xi, const T* x, Bn d, bool training, double eps, double momentum, T* rm, int64_t srm,
                           T* rv, int64_t srv, T* smean, int64_t ssm, T* sinv, int64_t ssi, double* mean_out,
                           double* inv_out) {
  const int64_t ch = blockIdx.x;
  const int64_t cnt = d.N * d.L;
  double mean, inv;
  if (training) {
    double s = 0;
    for (int64_t m = threadIdx.x; m < cnt; m += blockDim.x) {
      int64_t off[1];
      xi.at((m / d.L * d.C + ch) * d.L + m % d.L, off);
      s += double(x[off[0]]);
    }
    mean = block_reduce(s, [](double a, double b) { return a + b; }) / double(cnt > 0 ? cnt : 1);
    double v = 0;
    for (int64_t m = threadIdx.x; m < cnt; m += blockDim.x) {
      int64_t off[1];
      xi.at((m / d.L * d.C + ch) * d.L + m % d.L, off);
      const double t = double(x[off[0]]) - mean;
      v += t * t;
    }
    const double var = block_reduce(v, [](double a, double b) { return a + b; }) / double(cnt > 0 ? cnt : 1);
    inv = 1.0 / sqrt(var + eps);
    if (threadIdx.x == 0) {
      const double unbiased = cnt > 1 ? var * double(cnt) / double(cnt - 1) : var;
      rm[ch * srm] = T((1.0 - momentum) * double(rm[ch * srm]) + momentum * mean);
      rv[ch * srv] = T((1.0 - momentum) * double(rv[ch * srv]) + momentum * unbiased);
    }
  } else {
    mean = double(rm[ch * srm]);
    inv = 1.0 / sqrt(double(rv[ch * srv]) + eps);
  }
  if (threadIdx.x == 0) {
    smean[ch * ssm] = T(mean);
    sinv[ch * ssi] = T(inv);
    mean_out[ch] = mean;
    inv_out[ch] = inv;
  }
}

template <class T>
__global__ void bn_apply_k(Idx<2> ix, int64_t n, Bn d, T* y, const T* x, const T* gamma, int64_t sg, const T* beta,
                           int64_t sb, const double* mean, const double* inv) {
  BRAID_GRID_LOOP(e, n) {
    int64_t off[2];
    ix.at(e, off);
    const int64_t ch = e / d.L % d.C;
    const T scale = T(double(gamma[ch * sg]) * inv[ch]);
    y[off[0]] = (x[off[1]] - T(mean[ch])) * scale + beta[ch * sb];
  }
}

// Per channel: dbeta = sum dy, dgamma = sum dy * xhat (double, scratch for dx).
template <class T>
__global__ void bn_bwd_sums_k(Idx<2> ix, const T* dy, const T* x, Bn d, const T* smean, int64_t ssm, const T* sinv,
                              int64_t ssi, T* dgamma, int64_t sdg, T* dbeta, int64_t sdb, double* sums) {
  const int64_t ch = blockIdx.x, cnt = d.N * d.L;
  const double mean = double(smean[ch * ssm]), inv = double(sinv[ch * ssi]);
  double a = 0, b = 0;
  for (int64_t m = threadIdx.x; m < cnt; m += blockDim.x) {
    int64_t off[2];
    ix.at((m / d.L * d.C + ch) * d.L + m % d.L, off);
    const double g = double(dy[off[0]]);
    a += g;
    b += g * (double(x[off[1]]) - mean) * inv;
  }
  a = block_reduce(a, [](double u, double v) { return u + v; });
  b = block_reduce(b, [](double u, double v) { return u + v; });
  if (threadIdx.x == 0) {
    dbeta[ch * sdb] = T(a);
    dgamma[ch * sdg] = T(b);
    sums[2 * ch] = a;
    sums[2 * ch + 1] = b;
  }
}

template <class T>
__global__ void bn_bwd_dx_k(Idx<3> ix, int64_t n, Bn d, bool training, T* dx, const T* dy, const T* x, const T* gamma,
                            int64_t sg, const T* smean, int64_t ssm, const T* sinv, int64_t ssi, const double* sums) {
  BRAID_GRID_LOOP(e, n) {
    int64_t off[3];
    ix.at(e, off);
    const int64_t ch = e / d.L % d.C;
    const double inv = double(sinv[ch * ssi]), g = double(gamma[ch * sg]), go = double(dy[off[1]]);
    if (!training) {
      dx[off[0]] = T(go * g * inv);
    } else {
      const double cnt = double(d.N * d.L), xhat = (double(x[off[2]]) - double(smean[ch * ssm])) * inv;
      dx[off[0]] = T(g * inv / cnt * (cnt * go - sums[2 * ch] - xhat * sums[2 * ch + 1]));
    }
  }
}

// ---- SOFTMAX over one axis: one thread per row (outer, inner) ----
template <class T>
__global__ void softmax_k(Idx<2> rows, int64_t nrows, int64_t len, int64_t si, int64_t so, T* o, const T* in,
                          bool log_) {
  BRAID_GRID_LOOP(r, nrows) {
    int64_t base[2];
    rows.at(r, base);
    const T* x = in + base[1];
    T* y = o + base[0];
    double mx = -INFINITY;
    for (int64_t k = 0; k < len; ++k) mx = fmax(mx, double(x[k * si]));
    double sum = 0;
    for (int64_t k = 0; k < len; ++k) sum += exp(double(x[k * si]) - mx);
    const double lse = log(sum);
    for (int64_t k = 0; k < len; ++k) {
      const double z = double(x[k * si]) - mx;
      y[k * so] = T(log_ ? z - lse : exp(z) / sum);
    }
  }
}

// Long rows (len >= kThreads): one block per row, the max and the sum reduced across the block.
template <class T>
__global__ void softmax_block_k(Idx<2> rows, int64_t nrows, int64_t len, int64_t si, int64_t so, T* o, const T* in,
                                bool log_) {
  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
    int64_t base[2];
    rows.at(r, base);
    const T* x = in + base[1];
    T* y = o + base[0];
    double mx = -INFINITY;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) mx = fmax(mx, double(x[k * si]));
    mx = block_reduce(mx, [](double a, double b) { return fmax(a, b); });
    double sum = 0;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) sum += exp(double(x[k * si]) - mx);
    sum = block_reduce(sum, [](double a, double b) { return a + b; });
    const double lse = log(sum);
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const double z = double(x[k * si]) - mx;
      y[k * so] = T(log_ ? z - lse : exp(z) / sum);
    }
  }
}

// ---- SOFTMAX_CE (+ backward): one thread per row; a bad label sets the error flag ----
template <class T, class L>
__global__ void softmax_ce_k(int64_t N, int64_t K, const T* x, int64_t sxn, int64_t sxk, const L* lab, int64_t sl,
                             const T* dloss, int64_t sd, T* o, int64_t son, int64_t sok, bool backward, int* flag) {
  BRAID_GRID_LOOP(n, N) {
    const T* row = x + n * sxn;
    const int64_t label = int64_t(lab[n * sl]);
    const bool bad = label < 0 || label >= K;
    if (bad && flag != nullptr) *flag = kErrLabel;
    double mx = -INFINITY;
    for (int64_t k = 0; k < K; ++k) mx = fmax(mx, double(row[k * sxk]));
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += exp(double(row[k * sxk]) - mx);
    if (!backward) {
      // log(sum) - (x[label] - max): adding max back first cancelled for logits with a large offset.
      o[n * son] = bad ? T(NAN) : T(log(sum) - (double(row[label * sxk]) - mx));
    } else {
      const double g = double(dloss[n * sd]);
      for (int64_t k = 0; k < K; ++k) {
        const double p = exp(double(row[k * sxk]) - mx) / sum;
        o[n * son + k * sok] = T((p - (k == label ? 1.0 : 0.0)) * g);
      }
    }
  }
}

}  // namespace

braid_status conv2d(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &x = c.inputs[0], &w = c.inputs[1], &y = c.outputs[0];
  const bool has_bias = c.num_inputs >= 3;
  const Geo g{c.i[0], c.i[1], c.i[2], c.i[3]};
  const int64_t n = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
  if (n == 0) return BRAID_OK;
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    conv_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(t4(x), ptr<const T>(x), t4(w), ptr<const T>(w),
                                                          has_bias ? ptr<const T>(c.inputs[2]) : nullptr,
                                                          has_bias ? c.inputs[2].strides[0] : 0, t4(y), ptr<T>(y), g);
  });
  return launched("conv2d", msg);
}

braid_status conv2d_bwd_data(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &dy = c.inputs[0], &w = c.inputs[1], &dx = c.outputs[0];
  const Geo g{c.i[0], c.i[1], c.i[2], c.i[3]};
  const int64_t n = dx.shape[0] * dx.shape[1] * dx.shape[2] * dx.shape[3];
  if (n == 0) return BRAID_OK;
  visit_float(dy.dtype, [&](auto t) {
    using T = decltype(t);
    conv_bwd_data_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(t4(dy), ptr<const T>(dy), t4(w), ptr<const T>(w),
                                                                   t4(dx), ptr<T>(dx), g);
  });
  return launched("conv2d_bwd_data", msg);
}

braid_status conv2d_bwd_weight(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &dy = c.inputs[0], &x = c.inputs[1], &dw = c.outputs[0];
  const Geo g{c.i[0], c.i[1], c.i[2], c.i[3]};
  const int64_t n = dw.shape[0] * dw.shape[1] * dw.shape[2] * dw.shape[3];
  if (n == 0) return BRAID_OK;
  visit_float(dy.dtype, [&](auto t) {
    using T = decltype(t);
    if (dy.shape[0] * dy.shape[2] * dy.shape[3] > kWeightChainPerThread)
      conv_bwd_weight_k<T><<<blocks_per_output(n), kThreads, 0, env.stream>>>(t4(dy), ptr<const T>(dy), t4(x),
                                                                              ptr<const T>(x), t4(dw), ptr<T>(dw), g);
    else
      conv_bwd_weight_thread_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(t4(dy), ptr<const T>(dy), t4(x),
                                                                              ptr<const T>(x), t4(dw), ptr<T>(dw), g);
  });
  return launched("conv2d_bwd_weight", msg);
}

namespace {
Win win(const braid_kernel_call& c) {
  return {c.i[1], c.i[2], c.i[3], c.i[4], c.i[5], c.i[6], c.i[0] == BRAID_POOL_MAX};
}
}  // namespace

braid_status pool2d(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &x = c.inputs[0], &y = c.outputs[0];
  const int64_t n = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
  if (n == 0) return BRAID_OK;
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    pool_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(t4(x), ptr<const T>(x), t4(y), ptr<T>(y), win(c));
  });
  return launched("pool2d", msg);
}

braid_status pool2d_bwd(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &dy = c.inputs[0], &x = c.inputs[1], &dx = c.outputs[0];
  const int64_t n = dx.shape[0] * dx.shape[1] * dx.shape[2] * dx.shape[3];
  if (n == 0) return BRAID_OK;
  visit_float(dy.dtype, [&](auto t) {
    using T = decltype(t);
    pool_bwd_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(t4(dy), ptr<const T>(dy), t4(x), ptr<const T>(x), t4(dx),
                                                              ptr<T>(dx), win(c));
  });
  return launched("pool2d_bwd", msg);
}

namespace {
Bn bn_dims(const braid_buffer_view& x) {
  Bn d{x.shape[0], x.shape[1], 1};
  for (int k = 2; k < x.ndim; ++k) d.L *= x.shape[k];
  return d;
}
}  // namespace

braid_status batch_norm(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &x = c.inputs[0], &gamma = c.inputs[1], &beta = c.inputs[2], &rm = c.inputs[3], &rv = c.inputs[4];
  const auto &y = c.outputs[0], &sm = c.outputs[1], &si = c.outputs[2];
  const Bn d = bn_dims(x);
  if (d.C == 0) return BRAID_OK;
  auto* stats = static_cast<double*>(env.device->scratch_alloc(size_t(2 * d.C) * sizeof(double), env.stream));
  if (stats == nullptr) {
    msg = "batch_norm: out of device memory for scratch";
    return BRAID_ERR_OUT_OF_MEMORY;
  }
  Idx<1> xi;
  const int64_t* sx[1] = {x.strides};
  make_idx(xi, x.ndim, x.shape, sx);
  Idx<2> ix;
  const int64_t* st[2] = {y.strides, x.strides};
  const int64_t n = make_idx(ix, x.ndim, x.shape, st);
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    bn_stats_k<T><<<unsigned(d.C), kThreads, 0, env.stream>>>(
        xi, ptr<const T>(x), d, c.i[0] != 0, c.f[0], c.f[1], ptr<T>(rm), rm.strides[0], ptr<T>(rv), rv.strides[0],
        ptr<T>(sm), sm.strides[0], ptr<T>(si), si.strides[0], stats, stats + d.C);
    if (n > 0)
      bn_apply_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(
          ix, n, d, ptr<T>(y), ptr<const T>(x), ptr<const T>(gamma), gamma.strides[0], ptr<const T>(beta),
          beta.strides[0], stats, stats + d.C);
  });
  braid_status s = launched("batch_norm", msg);
  env.device->scratch_free(stats, env.stream);
  return s;
}

braid_status batch_norm_bwd(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &dy = c.inputs[0], &x = c.inputs[1], &gamma = c.inputs[2], &sm = c.inputs[3], &si = c.inputs[4];
  const auto &dx = c.outputs[0], &dg = c.outputs[1], &db = c.outputs[2];
  const Bn d = bn_dims(x);
  if (d.C == 0) return BRAID_OK;
  auto* sums = static_cast<double*>(env.device->scratch_alloc(size_t(2 * d.C) * sizeof(double), env.stream));
  if (sums == nullptr) {
    msg = "batch_norm_bwd: out of device memory for scratch";
    return BRAID_ERR_OUT_OF_MEMORY;
  }
  Idx<2> si2;
  const int64_t* s2[2] = {dy.strides, x.strides};
  make_idx(si2, x.ndim, x.shape, s2);
  Idx<3> ix;
  const int64_t* st[3] = {dx.strides, dy.strides, x.strides};
  const int64_t n = make_idx(ix, x.ndim, x.shape, st);
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    bn_bwd_sums_k<T><<<unsigned(d.C), kThreads, 0, env.stream>>>(
        si2, ptr<const T>(dy), ptr<const T>(x), d, ptr<const T>(sm), sm.strides[0], ptr<const T>(si), si.strides[0],
        ptr<T>(dg), dg.strides[0], ptr<T>(db), db.strides[0], sums);
    if (n > 0)
      bn_bwd_dx_k<T><<<blocks_for(n), kThreads, 0, env.stream>>>(
          ix, n, d, c.i[0] != 0, ptr<T>(dx), ptr<const T>(dy), ptr<const T>(x), ptr<const T>(gamma), gamma.strides[0],
          ptr<const T>(sm), sm.strides[0], ptr<const T>(si), si.strides[0], sums);
  });
  braid_status s = launched("batch_norm_bwd", msg);
  env.device->scratch_free(sums, env.stream);
  return s;
}

braid_status softmax(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &in = c.inputs[0], &o = c.outputs[0];
  const int axis = int(c.i[0]);
  // Rows: the shape with the axis set to 1; each row walks the axis with its own strides.
  int64_t shape[BRAID_MAX_DIMS];
  for (int d = 0; d < in.ndim; ++d) shape[d] = d == axis ? 1 : in.shape[d];
  Idx<2> rows;
  const int64_t* st[2] = {o.strides, in.strides};
  const int64_t nrows = make_idx(rows, in.ndim, shape, st);
  if (nrows == 0 || in.shape[axis] == 0) return BRAID_OK;
  visit_float(in.dtype, [&](auto t) {
    using T = decltype(t);
    const int64_t len = in.shape[axis];
    if (len >= kThreads) {
      const unsigned grid = static_cast<unsigned>(nrows < 65535 * 8 ? nrows : 65535 * 8);
      softmax_block_k<T><<<grid, kThreads, 0, env.stream>>>(rows, nrows, len, in.strides[axis], o.strides[axis],
                                                            ptr<T>(o), ptr<const T>(in), c.i[1] != 0);
    } else {
      softmax_k<T><<<blocks_for(nrows), kThreads, 0, env.stream>>>(rows, nrows, len, in.strides[axis], o.strides[axis],
                                                                   ptr<T>(o), ptr<const T>(in), c.i[1] != 0);
    }
  });
  return launched("softmax", msg);
}

namespace {
braid_status ce_any(const braid_kernel_call& c, KernelEnv& env, std::string& msg, bool backward) {
  const auto &x = c.inputs[0], &lab = c.inputs[1], &o = c.outputs[0];
  const int64_t N = x.shape[0], K = x.shape[1];
  if (lab.dtype != BRAID_INT32 && lab.dtype != BRAID_INT64)
    return refuse(c, lab.dtype, "labels must be int32 or int64", msg);
  if (N == 0) return BRAID_OK;
  const braid_buffer_view* dl = backward ? &c.inputs[2] : nullptr;
  visit_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    auto go = [&](auto l) {
      using L = decltype(l);
      softmax_ce_k<T, L><<<blocks_for(N), kThreads, 0, env.stream>>>(
          N, K, ptr<const T>(x), x.strides[0], x.strides[1], ptr<const L>(lab), lab.strides[0],
          dl ? ptr<const T>(*dl) : nullptr, dl ? dl->strides[0] : 0, ptr<T>(o), o.strides[0],
          backward ? o.strides[1] : 0, backward, env.error_flag);
    };
    if (lab.dtype == BRAID_INT32)
      go(int32_t{});
    else
      go(int64_t{});
  });
  return launched(backward ? "softmax_cross_entropy_bwd" : "softmax_cross_entropy", msg);
}
}  // namespace

braid_status softmax_ce(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  return ce_any(c, env, msg, false);
}
braid_status softmax_ce_bwd(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  return ce_any(c, env, msg, true);
}

}  // namespace braid::cuda::kern
