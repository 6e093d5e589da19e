// REDUCE and ARGMAX: a block per reduced output (a thread per output for short rows), with the CPU
// backend's folds (NaN propagates; the first maximum wins). Own kernels, as nn.cu's.
#include "common.cuh"
#include "device.h"
#include "launch.h"

namespace braid::cuda::kern {
namespace {

// ---- REDUCE MAX/MIN as the CPU backend's fold: an element replaces the running extremum when it beats
// it or is NaN (NaN propagates); a tie keeps the running, earlier, element (amax([-0., 0.]) = -0) ----
template <class T>
__device__ __forceinline__ bool later_wins(bool is_max, T running, T x) {
  if constexpr (std::is_integral_v<T>)
    return is_max ? x > running : x < running;
  else
    return x != x || (is_max ? x > running : x < running);
}

// A candidate of the block tree: its value and its index along the reduction. Threads hold strided
// elements, so the tree's order is not the elements' order; combining by index keeps the rule above
// whatever the tree's shape (the earlier of the two decides, as if the later one came after it).
template <class T>
struct Ext {
  T v;
  int64_t i;
};
template <class T>
__device__ __forceinline__ Ext<T> ext_combine(bool is_max, Ext<T> a, Ext<T> b) {
  const bool a_first = a.i <= b.i;
  const Ext<T> first = a_first ? a : b, second = a_first ? b : a;
  return later_wins(is_max, first.v, second.v) ? second : first;
}

// SUM/MEAN/NORM accumulate in acc_t<T> (double; uint64 for integers, so an overflow wraps as on the
// CPU); an integer sum is stored through int64 (two's complement), as the CPU backend's SumR does.
template <class T>
__device__ __forceinline__ T sum_result(acc_t<T> a, int op, int64_t nred) {
  if constexpr (std::is_integral_v<T>) {
    return T(int64_t(a));
  } else {  // MEAN and NORM are float-only (reduce() checks)
    if (op == BRAID_REDUCE_MEAN) a = nred > 0 ? a / acc_t<T>(nred) : acc_t<T>(NAN);
    if (op == BRAID_REDUCE_NORM) a = sqrt(a);
    return T(a);
  }
}

// ---- REDUCE: one block per output element; kept = (out, in) offsets over out's shape, red = in's
// offsets over the reduced axes ----
template <class T>
__global__ void reduce_k(Idx<2> kept, int64_t nout, Idx<1> red, int64_t nred, T* o, const T* in, int op) {
  using A = acc_t<T>;
  const bool extremum = op == BRAID_REDUCE_MAX || op == BRAID_REDUCE_MIN, is_max = op == BRAID_REDUCE_MAX;
  for (int64_t e = blockIdx.x; e < nout; e += gridDim.x) {
    int64_t base[2];
    kept.at(e, base);
    if (extremum) {
      // Every thread starts from element 0, so threads without elements hold a real candidate; it
      // never displaces the result (a repeat of the earliest element).
      Ext<T> acc{T(0), 0};
      if (nred > 0) {
        int64_t off[1];
        red.at(0, off);
        acc.v = in[base[1] + off[0]];
      }
      for (int64_t r = threadIdx.x; r < nred; r += blockDim.x) {
        int64_t off[1];
        red.at(r, off);
        const T x = in[base[1] + off[0]];
        if (later_wins(is_max, acc.v, x)) acc = Ext<T>{x, r};
      }
      acc = block_reduce(acc, [is_max](Ext<T> a, Ext<T> b) { return ext_combine(is_max, a, b); });
      if (threadIdx.x == 0) o[base[0]] = acc.v;
    } else {
      A acc = A(0);
      for (int64_t r = threadIdx.x; r < nred; r += blockDim.x) {
        int64_t off[1];
        red.at(r, off);
        const A x = A(in[base[1] + off[0]]);
        acc += op == BRAID_REDUCE_NORM ? x * x : x;
      }
      acc = block_reduce(acc, [](A a, A b) { return a + b; });
      if (threadIdx.x == 0) o[base[0]] = sum_result<T>(acc, op, nred);
    }
  }
}

// Few elements per output (x.sum(-1) of a narrow matrix): one thread per output, a sequential loop.
template <class T>
__global__ void reduce_small_k(Idx<2> kept, int64_t nout, Idx<1> red, int64_t nred, T* o, const T* in, int op) {
  using A = acc_t<T>;
  const bool extremum = op == BRAID_REDUCE_MAX || op == BRAID_REDUCE_MIN, is_max = op == BRAID_REDUCE_MAX;
  BRAID_GRID_LOOP(e, nout) {
    int64_t base[2];
    kept.at(e, base);
    A acc = A(0);
    T best = T(0);
    for (int64_t r = 0; r < nred; ++r) {
      int64_t off[1];
      red.at(r, off);
      const T x = in[base[1] + off[0]];
      if (extremum) {
        if (r == 0 || later_wins(is_max, best, x)) best = x;
      } else {
        acc += op == BRAID_REDUCE_NORM ? A(x) * A(x) : A(x);
      }
    }
    o[base[0]] = extremum ? best : sum_result<T>(acc, op, nred);
  }
}

// ---- ARGMAX: one thread per output; the first maximum wins, NaN counts as the largest ----
template <class T>
__global__ void argmax_k(Idx<2> kept, int64_t nout, int64_t len, int64_t step, int64_t* o, const T* in) {
  BRAID_GRID_LOOP(e, nout) {
    int64_t base[2];
    kept.at(e, base);
    int64_t best_i = 0;
    T best = in[base[1]];
    for (int64_t k = 1; k < len; ++k) {
      const T x = in[base[1] + k * step];
      bool up;
      if constexpr (std::is_integral_v<T>)
        up = x > best;
      else
        up = x > best || (x != x && best == best);
      if (up) {
        best = x;
        best_i = k;
      }
    }
    o[base[0]] = best_i;
  }
}

}  // namespace

braid_status reduce(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &in = c.inputs[0], &o = c.outputs[0];
  const int op = int(c.i[0]);
  const bool integral = in.dtype == BRAID_INT32 || in.dtype == BRAID_INT64;
  if (op < 0 || op >= BRAID_REDUCE_COUNT || (integral && (op == BRAID_REDUCE_MEAN || op == BRAID_REDUCE_NORM))) {
    msg = "cuda backend: reduce op " + std::to_string(op) + " is not implemented for this dtype";
    return BRAID_ERR_UNSUPPORTED;
  }
  if (o.dtype != in.dtype) return refuse(c, in.dtype, "output dtype must match the input's", msg);
  int64_t nout;
  Idx<2> kept = kept_idx(o, in, nout);
  int64_t rshape[BRAID_MAX_DIMS], rstride[BRAID_MAX_DIMS];
  int nr = 0;
  for (int d = 0; d < in.ndim; ++d)
    if ((c.i[1] >> d) & 1) {
      rshape[nr] = in.shape[d];
      rstride[nr] = in.strides[d];
      ++nr;
    }
  Idx<1> red;
  const int64_t* rs[1] = {rstride};
  const int64_t nred = make_idx(red, nr, rshape, rs);
  if (nout == 0) return BRAID_OK;
  // A block per output only pays when each output has enough elements to share among its threads.
  const bool small = nred <= 64;
  visit_numeric(in.dtype, [&](auto t) {
    using T = decltype(t);
    if (small)
      reduce_small_k<T>
          <<<blocks_for(nout), kThreads, 0, env.stream>>>(kept, nout, red, nred, ptr<T>(o), ptr<const T>(in), op);
    else
      reduce_k<T><<<blocks_per_output(nout), kThreads, 0, env.stream>>>(kept, nout, red, nred, ptr<T>(o),
                                                                        ptr<const T>(in), op);
  });
  return launched("reduce", msg);
}

braid_status argmax(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &in = c.inputs[0], &o = c.outputs[0];
  const int axis = int(c.i[0]);
  if (o.dtype != BRAID_INT64) return refuse(c, in.dtype, "output must be int64", msg);
  int64_t nout;
  Idx<2> kept = kept_idx(o, in, nout);
  if (nout == 0 || in.shape[axis] == 0) return BRAID_OK;
  visit_numeric(in.dtype, [&](auto t) {
    using T = decltype(t);
    argmax_k<T><<<blocks_for(nout), kThreads, 0, env.stream>>>(kept, nout, in.shape[axis], in.strides[axis],
                                                               ptr<int64_t>(o), ptr<const T>(in));
  });
  return launched("argmax", msg);
}

}  // namespace braid::cuda::kern
