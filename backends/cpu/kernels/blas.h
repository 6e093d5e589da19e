// Typed OpenBLAS gemm (row-major) shared by MATMUL and CONV2D.
#pragma once
#include "common.h"
// (common.h first: see the note at its top)
#include <cblas.h>

namespace braid::cpu::kern {

// C = op(A) op(B) + beta C, with op(X) = X^T when t* is set.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0f, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                 int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

// OpenBLAS runs a gemm below this many multiply-adds on the calling thread (the threshold in its
// interface/gemm.c), so batches of such gemms are spread over the arena by the caller instead;
// bigger ones are threaded inside OpenBLAS (its thread count is the device's core share).
inline constexpr double kSmallGemm = 65536.0 * 4.0;

}  // namespace braid::cpu::kern
