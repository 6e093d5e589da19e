// Typed OpenBLAS gemm (row-major) shared by MATMUL and CONV2D, and its split over the device's cores.
// OpenBLAS is opened at run time (blas_library.h), so it runs the kernels for this CPU's vector ISA.
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include "blas_library.h"

namespace braid::cpu::kern {

// C = op(A) op(B) + beta C, with op(X) = X^T when t* is set.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0f, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                 int64_t ldb, double beta, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
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
