/* Why the CPU backend sends one-row matmuls to gemv (backends/cpu/kernels/blas.h): times OpenBLAS's
 * cblas_sgemm and cblas_sgemv on the chapter's MLP layer at batch 1 (1x512 by 512x256, float32, one
 * thread), 10000 calls each, three rounds. Not part of the build; OpenBLAS picks its kernels from
 * OPENBLAS_CORETYPE (docs/HARDWARE.md):
 *
 *   cc -O2 tools/gemv_vs_gemm.c -lopenblas -o /tmp/gemv_vs_gemm
 *   OPENBLAS_CORETYPE=Haswell /tmp/gemv_vs_gemm; OPENBLAS_CORETYPE=SkylakeX /tmp/gemv_vs_gemm
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  enum { K = 512, N = 256, CALLS = 10000 };
  openblas_set_num_threads(1);
  float* a = malloc(sizeof(float) * K);
  float* b = malloc(sizeof(float) * K * N);
  float* c = malloc(sizeof(float) * N);
  if (!a || !b || !c) return 1;
  for (int i = 0; i < K * N; i++) b[i] = (float)(i % 7) * 0.1f;
  for (int i = 0; i < K; i++) a[i] = 1.0f;
  for (int round = 0; round < 3; round++) {
    double t0 = now();
    for (int i = 0; i < CALLS; i++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
    double t1 = now();
    for (int i = 0; i < CALLS; i++) cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, b, N, a, 1, 0.0f, c, 1);
    double t2 = now();
    printf("%s: sgemm %.2f us, sgemv %.2f us per call\n", openblas_get_corename(), (t1 - t0) / CALLS * 1e6,
           (t2 - t1) / CALLS * 1e6);
  }
  free(a);
  free(b);
  free(c);
  return 0;
}
