// Shared device-side helpers of the .cu files: strided indexing (any strides, 0 = broadcast), dtype
// dispatch, conversions, launch geometry. Kept header-only and small: every template here is
// instantiated in each .cu that uses it, and nvcc time grows with each instantiation.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "braid_backend.h"
#include "buffer.h"
#include "float_to_int.h"
#include "kernels.h"

namespace braid::cuda::kern {

constexpr int kThreads = 256;

// Storage-only 16-bit floats (copy and fill only, as on the CPU backend).
struct h16 {
  uint16_t bits;
};
struct b16 {
  uint16_t bits;
};

// Element offsets of N operands that share one logical shape: element i (row-major over shape) lives
// at sum_d idx_d * st[k][d] in operand k. Adjacent dims that are contiguous in every operand are
// merged on the host, so a dense tensor costs one division per element.
template <int N>
struct Idx {
  int nd = 0;
  int64_t shape[BRAID_MAX_DIMS];
  int64_t st[N][BRAID_MAX_DIMS];

  __device__ __forceinline__ void at(int64_t i, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = i / shape[d], r = i - q * shape[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * st[k][d];
      i = q;
    }
  }
};

// shape and the strides of each operand (element strides); returns the element count.
template <int N>
inline int64_t make_idx(Idx<N>& x, int ndim, const int64_t* shape, const int64_t* const (&strides)[N]) {
  int64_t n = 1;
  x.nd = 0;
  for (int d = 0; d < ndim; ++d) {
    n *= shape[d];
    if (shape[d] == 1) continue;  // size-1 dims add nothing to any offset
    if (x.nd > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge = merge && x.st[k][x.nd - 1] == strides[k][d] * shape[d];
      if (merge) {
        x.shape[x.nd - 1] *= shape[d];
        for (int k = 0; k < N; ++k) x.st[k][x.nd - 1] = strides[k][d];
        continue;
      }
    }
    x.shape[x.nd] = shape[d];
    for (int k = 0; k < N; ++k) x.st[k][x.nd] = strides[k][d];
    ++x.nd;
  }
  return n;
}

template <class T>
inline T* ptr(const braid_buffer_view& v) {
  return reinterpret_cast<T*>(static_cast<char*>(v.buffer->ptr) + v.byte_offset);
}

inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

// The grid of a kernel that gives each of n outputs a block of its own (reduce_k, conv_bwd_weight_k),
// looping over them past the cap.
inline unsigned blocks_per_output(int64_t n) {
  return static_cast<unsigned>(n < 1 ? 1 : n < 65535 * 8 ? n : 65535 * 8);
}

#define BRAID_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

inline braid_status launched(const char* what, std::string& message) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return BRAID_OK;
  message = std::string(what) + ": " + cudaGetErrorString(e);
  return e == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_KERNEL;
}

// Host-side dtype dispatch: f(T{}) for the listed dtypes; false when dt is not among them.
template <class F>
bool visit_float(braid_dtype dt, F&& f) {
  switch (dt) {
    case BRAID_FLOAT32: f(float{}); return true;
    case BRAID_FLOAT64: f(double{}); return true;
    default: return false;
  }
}
template <class F>
bool visit_numeric(braid_dtype dt, F&& f) {
  switch (dt) {
    case BRAID_INT32: f(int32_t{}); return true;
    case BRAID_INT64: f(int64_t{}); return true;
    default: return visit_float(dt, f);
  }
}
template <class F>
bool visit_all(braid_dtype dt, F&& f) {
  switch (dt) {
    case BRAID_UINT8: f(uint8_t{}); return true;
    case BRAID_FLOAT16: f(h16{}); return true;
    case BRAID_BFLOAT16: f(b16{}); return true;
    default: return visit_numeric(dt, f);
  }
}

// ---- conversions (as the CPU backend: round to nearest even; float -> int truncates and saturates,
// NaN -> 0; int -> narrower int wraps) ----
using plugin::float_to_int;  // backends/common/float_to_int.h

// Host and device: launchers convert a call's scalar attribute with it too. A __device__-only function
// called from host code inside a template is not diagnosed by nvcc; its host-side body is exit(1)
// (the BINARY_SCALAR launcher hung every process that way; tests/cuda checks the plugin imports no
// exit).
template <class To, class From>
__host__ __device__ __forceinline__ To cvt(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, h16>) {
    return cvt<To>(__half2float(__ushort_as_half(x.bits)));
  } else if constexpr (std::is_same_v<From, b16>) {
    return cvt<To>(__bfloat162float(__ushort_as_bfloat16(x.bits)));
  } else if constexpr (std::is_same_v<To, h16>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, uint8_t>)
      return h16{__half_as_ushort(__float2half_rn(float(x)))};
    else
      return h16{__half_as_ushort(__double2half(double(x)))};
  } else if constexpr (std::is_same_v<To, b16>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, uint8_t>)
      return b16{__bfloat16_as_ushort(__float2bfloat16_rn(float(x)))};
    else
      return b16{__bfloat16_as_ushort(__double2bfloat16(double(x)))};
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// Wide accumulator of sums: float32 and float64 accumulate in double, integers in uint64 (as the CPU
// backend: an overflow wraps, where a signed int64 overflow would be undefined).
template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

// ---- block reduction (shared memory tree; kThreads is a power of two): REDUCE, the convolution's
// weight gradient, BATCH_NORM and SOFTMAX ----
template <class A, class F>
__device__ inline A block_reduce(A v, F combine) {
  __shared__ A buf[kThreads];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) buf[threadIdx.x] = combine(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  A r = buf[0];
  __syncthreads();  // buf is reused by the next call
  return r;
}

// The operand dtypes the kernels assume and the host guarantees, checked as the CPU backend checks
// them: a wrong one would be read or written with the wrong element size. BRAID_ERR_UNSUPPORTED with
// the CPU backend's reason.
inline braid_status refuse(const braid_kernel_call& c, braid_dtype dt, const char* detail, std::string& msg) {
  msg = std::string("cuda backend: ") + plugin::op_name(c.op) + " is not implemented for dtype " +
        plugin::dtype_name(dt) + " (" + detail + ")";
  return BRAID_ERR_UNSUPPORTED;
}

// Shared by REDUCE, ARGMAX, SOFTMAX: (out, in) offsets over out's shape.
inline Idx<2> kept_idx(const braid_buffer_view& o, const braid_buffer_view& in, int64_t& n) {
  Idx<2> ix;
  const int64_t* st[2] = {o.strides, in.strides};
  n = make_idx(ix, o.ndim, o.shape, st);
  return ix;
}

}  // namespace braid::cuda::kern
