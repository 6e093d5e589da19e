// TAKE and TAKE_BWD (abi/braid_backend.h, "Indexing kernels"): contiguous [outer, n or m, inner] views
// and a 1-D int32/int64 index. An index outside [-n, n) sets the error flag (kErrIndex), which the
// completion thread turns into BRAID_ERR_KERNEL; the element it would have read is written as 0.
#include "common.cuh"
#include "launch.h"

namespace braid::cuda::kern {
namespace {

// index[j] wrapped into [0, n), or -1 when it is outside [-n, n).
template <class I>
__device__ __forceinline__ int64_t row_of(const I* index, int64_t j, int64_t n) {
  const int64_t i = index[j];
  if (i < -n || i >= n) return -1;
  return i < 0 ? i + n : i;
}

// Elements copied as E, an unsigned type of the element's width.
template <class E, class I>
__global__ void take_k(int64_t total, int64_t m, int64_t n, int64_t inner, E* out, const E* x, const I* index,
                       int* flag) {
  BRAID_GRID_LOOP(t, total) {
    const int64_t k = t % inner, j = (t / inner) % m, o = t / (inner * m);
    const int64_t r = row_of(index, j, n);
    if (r < 0) {
      if (flag) *flag = kErrIndex;
      out[t] = E(0);
    } else {
      out[t] = x[(o * n + r) * inner + k];
    }
  }
}

// One thread per dx element, summing its picks in increasing j: deterministic, no atomics.
template <class T, class I>
__global__ void take_bwd_k(int64_t total, int64_t m, int64_t n, int64_t inner, T* dx, const T* dy, const I* index,
                           int* flag) {
  BRAID_GRID_LOOP(t, total) {
    const int64_t k = t % inner, r = (t / inner) % n, o = t / (inner * n);
    T sum = T(0);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t rj = row_of(index, j, n);
      if (rj < 0 && flag) *flag = kErrIndex;
      if (rj == r) sum += dy[(o * m + j) * inner + k];
    }
    dx[t] = sum;
  }
}

template <class F>
bool visit_index(braid_dtype dt, F&& f) {
  switch (dt) {
    case BRAID_INT32: f(int32_t{}); return true;
    case BRAID_INT64: f(int64_t{}); return true;
    default: return false;
  }
}

}  // namespace

braid_status take(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const auto &x = c.inputs[0], &index = c.inputs[1], &y = c.outputs[0];
  const bool bwd = c.op == BRAID_KOP_TAKE_BWD;
  const int64_t m = bwd ? x.shape[1] : y.shape[1], n = bwd ? y.shape[1] : x.shape[1], inner = x.shape[2];
  const int64_t total = y.shape[0] * y.shape[1] * y.shape[2];
  if (total == 0) return BRAID_OK;
  bool known = visit_index(index.dtype, [&](auto i) {
    using I = decltype(i);
    const I* idx = ptr<const I>(index);
    if (bwd) {
      visit_float(x.dtype, [&](auto t) {
        using T = decltype(t);
        take_bwd_k<T, I><<<blocks_for(total), kThreads, 0, env.stream>>>(total, m, n, inner, ptr<T>(y), ptr<const T>(x),
                                                                         idx, env.error_flag);
      });
    } else {
      const auto go = [&](auto e) {
        using E = decltype(e);
        take_k<E, I><<<blocks_for(total), kThreads, 0, env.stream>>>(total, m, n, inner, ptr<E>(y), ptr<const E>(x),
                                                                     idx, env.error_flag);
      };
      switch (plugin::dtype_size(x.dtype)) {
        case 1: go(uint8_t{}); break;
        case 2: go(uint16_t{}); break;
        case 4: go(uint32_t{}); break;
        default: go(uint64_t{}); break;
      }
    }
  });
  if (!known) {
    msg = "take: indices must be int32 or int64";
    return BRAID_ERR_UNSUPPORTED;
  }
  return launched(bwd ? "take_bwd" : "take", msg);
}

}  // namespace braid::cuda::kern
