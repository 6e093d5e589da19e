// float32 gemm through oneDNN's dnnl_sgemm (JIT kernels for the CPU's ISA), when the plugin was built
// with oneDNN (BRAID_HAVE_ONEDNN) and BRAID_CPU_GEMM does not ask for OpenBLAS. Why, and the figures:
// backends/cpu/README.md, "Matrix products".
#pragma once
#include <cstdint>

namespace braid::cpu::kern::onednn {

// Row-major C = op(A) op(B) + beta C on the calling thread alone (oneDNN as an OpenMP team of one, as
// for its convolutions). Returns false when it did not run (no oneDNN, BRAID_CPU_GEMM=openblas, or an
// error): the caller then runs OpenBLAS.
#ifdef BRAID_HAVE_ONEDNN
// Makes oneDNN on the calling thread an OpenMP team of one (once per thread), so that it never starts
// a thread pool beside the device's arena; every oneDNN call (gemms, convolutions) runs after it.
void single_threaded();
bool sgemm_in_use();  // whether float32 gemms run here: BRAID_CPU_GEMM, read once
bool sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float beta, float* c, int64_t ldc);
#else
inline bool sgemm_in_use() { return false; }
inline bool sgemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float, float*,
                  int64_t) {
  return false;
}
#endif

}  // namespace braid::cpu::kern::onednn
