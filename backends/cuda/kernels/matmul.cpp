// MATMUL through cuBLAS (strided-batched GEMM; float32 in full FP32 unless BRAID_CUDA_TF32=1). cuBLAS
// is column-major: the row-major product C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T. A
// matrix view whose rows or columns are unit-stride is passed as it is (with transposition flags);
// any other layout is first copied into contiguous scratch, as is an output cuBLAS cannot write.
#include <climits>
#include <cstring>
#include <string>

#include "buffer.h"
#include "device.h"
#include "launch.h"

namespace braid::cuda::kern {
namespace {

struct Mat {
  const char* base;      // byte address of element 0
  bool row_major;        // rows contiguous (column stride 1) rather than columns
  int64_t ld;            // leading dimension (elements)
  int64_t batch_stride;  // elements; 0 = broadcast
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// A [B, r, c] view as cuBLAS sees it, or false when neither r nor c is unit-stride or the leading
// dimension does not fit cuBLAS's int (such a view goes through contiguous scratch, whose leading
// dimension is a matrix size, checked to fit).
bool as_blas(const braid_buffer_view& v, int64_t esize, Mat& m) {
  const int64_t r = v.shape[1], c = v.shape[2];
  int64_t sr = v.strides[1], sc = v.strides[2];
  if (c <= 1) sc = 1;              // a single column: any stride works
  if (r <= 1) sr = c > 0 ? c : 1;  // a single row: likewise
  m.base = static_cast<const char*>(v.buffer->ptr) + v.byte_offset;
  m.batch_stride = v.shape[0] > 1 ? v.strides[0] : 0;
  if (sc == 1 && sr >= (c > 1 ? c : 1)) {
    m.row_major = true;
    m.ld = sr;
  } else if (sr == 1 && sc >= (r > 1 ? r : 1)) {
    m.row_major = false;
    m.ld = sc;
  } else {
    return false;
  }
  (void)esize;
  return fits_int(m.ld);
}

braid_buffer_view dense_like(const braid_buffer_view& v, braid_backend_buffer_t* holder) {
  braid_buffer_view d = v;
  d.buffer = holder;
  d.byte_offset = 0;
  int64_t s = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    d.strides[k] = s;
    s *= v.shape[k];
  }
  return d;
}

int64_t numel(const braid_buffer_view& v) {
  int64_t n = 1;
  for (int k = 0; k < v.ndim; ++k) n *= v.shape[k];
  return n;
}

}  // namespace

braid_status matmul(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  const braid_buffer_view &a = c.inputs[0], &b = c.inputs[1], &o = c.outputs[0];
  const bool ta = c.i[0] != 0, tb = c.i[1] != 0;
  const int64_t B = o.shape[0], M = o.shape[1], N = o.shape[2];
  const int64_t K = ta ? a.shape[1] : a.shape[2];
  if (B == 0 || M == 0 || N == 0) return BRAID_OK;
  if (K == 0) {  // an empty sum: zeros
    braid_kernel_call f{};
    f.struct_size = sizeof(f);
    f.op = BRAID_KOP_FILL;
    f.num_outputs = 1;
    f.outputs[0] = o;
    return fill(f, env, msg);
  }
  if (env.blas == nullptr || env.blas_handle == nullptr) {
    msg = std::string("matmul: cuBLAS unavailable (") + (env.blas_why[0] ? env.blas_why : "cublasCreate failed") + ")";
    return BRAID_ERR_UNSUPPORTED;
  }
  if (!fits_int(M) || !fits_int(N) || !fits_int(K) || !fits_int(B)) {
    msg = "matmul: cuBLAS takes M, N, K and the batch count as 32-bit ints; this one has M=" + std::to_string(M) +
          " N=" + std::to_string(N) + " K=" + std::to_string(K) + " batch=" + std::to_string(B);
    return BRAID_ERR_UNSUPPORTED;
  }
  // Element sizes: the operands' (2 for autocast's bfloat16/float16, whose product is float32) and the
  // result's.
  const bool low = a.dtype == BRAID_BFLOAT16 || a.dtype == BRAID_FLOAT16;
  const int64_t es_out = o.dtype == BRAID_FLOAT32 ? 4 : 8, es_in = low ? 2 : es_out;
  if (low && env.blas->gemm_strided_batched_ex == nullptr) {
    msg = "matmul: this cuBLAS has no cublasGemmStridedBatchedEx for bfloat16/float16 products";
    return BRAID_ERR_UNSUPPORTED;
  }
  // Operands cuBLAS cannot take as they are go through contiguous scratch (stream-ordered, freed after).
  braid_backend_buffer_t holders[3];
  void* scratch[3] = {nullptr, nullptr, nullptr};
  braid_status st = BRAID_OK;
  auto dense = [&](int k, const braid_buffer_view& v, bool copy_in) -> braid_buffer_view {
    const int64_t es = k < 2 ? es_in : es_out;
    scratch[k] = env.device->scratch_alloc(size_t(numel(v) * es), env.stream);
    holders[k].ptr = scratch[k];
    holders[k].size = uint64_t(numel(v) * es);
    braid_buffer_view d = dense_like(v, &holders[k]);
    if (scratch[k] == nullptr)
      st = BRAID_ERR_OUT_OF_MEMORY;
    else if (copy_in)
      st = copy_views(v, d, env.stream, msg);
    return d;
  };
  Mat ma{}, mb{}, mo{};
  braid_buffer_view va = a, vb = b, vo = o;
  if (!as_blas(va, es_in, ma)) {
    va = dense(0, a, true);
    if (st == BRAID_OK) as_blas(va, es_in, ma);
  }
  if (st == BRAID_OK && !as_blas(vb, es_in, mb)) {
    vb = dense(1, b, true);
    if (st == BRAID_OK) as_blas(vb, es_in, mb);
  }
  // The output must be row-major (C^T column-major) with a non-zero batch stride.
  bool out_direct = as_blas(vo, es_out, mo) && mo.row_major && (B == 1 || mo.batch_stride != 0);
  if (st == BRAID_OK && !out_direct) {
    vo = dense(2, o, false);
    if (st == BRAID_OK) as_blas(vo, es_out, mo);
  }
  // The rest of what cuBLAS takes as int: the leading dimensions (the batch strides are 64-bit in the
  // strided-batched API). as_blas sends a leading dimension that does not fit through scratch, so this
  // holds; it is checked here anyway, where a wrapped int would make cuBLAS read the wrong memory, so
  // that a later layout rule cannot break it silently.
  if (st == BRAID_OK && !(fits_int(ma.ld) && fits_int(mb.ld) && fits_int(mo.ld))) {
    msg = "matmul: a leading dimension exceeds cuBLAS's 32-bit ints (lda=" + std::to_string(mb.ld) +
          " ldb=" + std::to_string(ma.ld) + " ldc=" + std::to_string(mo.ld) + ")";
    st = BRAID_ERR_UNSUPPORTED;
  }
  if (st == BRAID_OK) {
    // Column-major operands of C^T (N x M) = X (N x K) * Y (K x M), X = op(b)^T, Y = op(a)^T. A
    // row-major stored S (r x c) is S^T column-major; a column-major one is S itself.
    const cublasOperation_t opx = (mb.row_major != tb) ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t opy = (ma.row_major != ta) ? CUBLAS_OP_N : CUBLAS_OP_T;
    const int m = int(N), n = int(M), k = int(K);
    cublasStatus_t s;
    if (low) {  // tensor cores: 16-bit operands, float32 accumulation and result
      const float one = 1.0f, zero = 0.0f;
      const cudaDataType t = a.dtype == BRAID_BFLOAT16 ? CUDA_R_16BF : CUDA_R_16F;
      s = env.blas->gemm_strided_batched_ex(
          env.blas_handle, opx, opy, m, n, k, &one, mb.base, t, int(mb.ld), mb.batch_stride, ma.base, t, int(ma.ld),
          ma.batch_stride, &zero, const_cast<char*>(mo.base), CUDA_R_32F, int(mo.ld),
          B > 1 ? mo.batch_stride : int64_t(M) * N, int(B), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if (o.dtype == BRAID_FLOAT32) {
      const float one = 1.0f, zero = 0.0f;
      s = env.blas->sgemm_strided_batched(env.blas_handle, opx, opy, m, n, k, &one,
                                          reinterpret_cast<const float*>(mb.base), int(mb.ld), mb.batch_stride,
                                          reinterpret_cast<const float*>(ma.base), int(ma.ld), ma.batch_stride, &zero,
                                          reinterpret_cast<float*>(const_cast<char*>(mo.base)), int(mo.ld),
                                          B > 1 ? mo.batch_stride : int64_t(M) * N, int(B));
    } else {
      const double one = 1.0, zero = 0.0;
      s = env.blas->dgemm_strided_batched(env.blas_handle, opx, opy, m, n, k, &one,
                                          reinterpret_cast<const double*>(mb.base), int(mb.ld), mb.batch_stride,
                                          reinterpret_cast<const double*>(ma.base), int(ma.ld), ma.batch_stride, &zero,
                                          reinterpret_cast<double*>(const_cast<char*>(mo.base)), int(mo.ld),
                                          B > 1 ? mo.batch_stride : int64_t(M) * N, int(B));
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
      msg = "matmul: cuBLAS GEMM failed with status " + std::to_string(int(s));
      st = s == CUBLAS_STATUS_ALLOC_FAILED ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_KERNEL;
    } else if (!out_direct) {
      st = copy_views(vo, o, env.stream, msg);
    }
  }
  for (void* p : scratch) env.device->scratch_free(p, env.stream);
  return st;
}

}  // namespace braid::cuda::kern
