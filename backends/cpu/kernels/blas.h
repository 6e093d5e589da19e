// Typed gemm (row-major; float32 on oneDNN where built in, see gemm_onednn.h, else OpenBLAS) shared by
// MATMUL and CONV2D, and its split over the device's cores.
// OpenBLAS is opened at run time (blas_library.h), so it runs the kernels for this CPU's vector ISA.
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include "blas_library.h"
#include "gemm_onednn.h"

namespace braid::cpu::kern {

inline void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, const float* a,
                      blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  if (onednn::sgemm(ta == CblasTrans, tb == CblasTrans, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  blas().sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
inline void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, const double* a,
                      blasint lda, const double* b, blasint ldb, double beta, double* c, blasint ldc) {
  blas().dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}
inline void blas_gemv(CBLAS_TRANSPOSE t, blasint m, blasint n, const float* a, blasint lda, const float* x,
                      blasint incx, float beta, float* y, blasint incy) {
  blas().sgemv(CblasRowMajor, t, m, n, 1.0f, a, lda, x, incx, beta, y, incy);
}
inline void blas_gemv(CBLAS_TRANSPOSE t, blasint m, blasint n, const double* a, blasint lda, const double* x,
                      blasint incx, double beta, double* y, blasint incy) {
  blas().dgemv(CblasRowMajor, t, m, n, 1.0, a, lda, x, incx, beta, y, incy);
}

// C = op(A) op(B) + beta C, with op(X) = X^T when t* is set. A product with one row or one column is
// a matrix-vector product: gemv reads the matrix once where gemm first packs it into a copy. For the
// chapter's MLP at batch 1 (1x512 by 512x256, float32, one thread, Debian's OpenBLAS 0.3.21 on an AMD
// EPYC; tools/gemv_vs_gemm.c): gemm 29 us with the Haswell and Zen kernels (what AVX2 machines run), 5.1 us
// with SkylakeX's; gemv 4.8 us with each.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  if (m == 1 && n > 1) {  // c[1,n] = op(a)[1,k] op(b)[k,n], i.e. c = op(b)^T a
    const blasint inca = blasint(ta ? lda : 1);
    if (tb)
      blas_gemv(CblasNoTrans, blasint(n), blasint(k), b, blasint(ldb), a, inca, beta, c, 1);  // b is [n,k]
    else
      blas_gemv(CblasTrans, blasint(k), blasint(n), b, blasint(ldb), a, inca, beta, c, 1);  // b is [k,n]
    return;
  }
  if (n == 1 && m > 1) {  // c[m,1] = op(a)[m,k] op(b)[k,1]
    const blasint incb = blasint(tb ? 1 : ldb);
    if (ta)
      blas_gemv(CblasTrans, blasint(k), blasint(m), a, blasint(lda), b, incb, beta, c, blasint(ldc));  // a is [k,m]
    else
      blas_gemv(CblasNoTrans, blasint(m), blasint(k), a, blasint(lda), b, incb, beta, c, blasint(ldc));  // a is [m,k]
    return;
  }
  blas_gemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n), blasint(k), a,
            blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

// OpenBLAS runs single-threaded (device.cpp): the arena's threads are the only ones that compute, and
// a gemm fans out over them here. Two thread pools on the same cores, each spinning (OpenBLAS with
// sched_yield) while the other worked, cost LeNet's second conv 2-3x its gemm time on this machine.
// Below this many multiply-adds a gemm is not worth splitting (OpenBLAS's own threading threshold).
inline constexpr double kSmallGemm = 65536.0 * 4.0;

// C = op(A) op(B) + beta C over the arena: the wider of C's two dimensions is cut into one piece per
// core (multiples of 16, OpenBLAS's register-block width), each an independent single-threaded gemm.
// The split depends only on the shape and the core count, never on scheduling, so results repeat run
// to run. Call it from the queue thread, or with a SerialExec (one piece) inside a parallel_for chunk.
template <class T>
void parallel_gemm(Exec& ex, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                   int64_t ldb, T beta, T* c, int64_t ldc) {
  const bool split_n = n >= m;
  const int64_t dim = split_n ? n : m;
  constexpr int64_t kAlign = 16;
  int64_t pieces = std::min<int64_t>({int64_t{ex.concurrency()}, (dim + kAlign - 1) / kAlign,
                                      int64_t(double(m) * double(n) * double(k) / kSmallGemm)});
  if (pieces <= 1) {
    gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t step = ((dim + pieces - 1) / pieces + kAlign - 1) / kAlign * kAlign;
  pieces = (dim + step - 1) / step;
  parallel(ex, pieces, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t lo = p * step, len = std::min(dim, lo + step) - lo;
      if (split_n)  // columns lo.. of op(B) and C
        gemm(ta, tb, m, len, k, a, lda, tb ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
      else  // rows lo.. of op(A) and C
        gemm(ta, tb, len, n, k, ta ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc, ldc);
    }
  });
}

}  // namespace braid::cpu::kern
