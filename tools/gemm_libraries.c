// Standalone: sgemm 2000^2 float32 through one library, as braid's CPU backend runs it ("split": the
// library single-threaded, N cut into one piece per thread in multiples of 16, each piece on a thread
// of its own), or on the library's own threads ("lib"). The measurement behind the CPU backend's
// choice of gemm library (backends/cpu/README.md, "Matrix products"). Prints the best and the mean
// GFLOP/s of 15 timed runs after 2 warm-ups.
//
//   cc -O2 -o /tmp/gemm_libraries tools/gemm_libraries.c -ldl -lpthread
//   OPENBLAS_CORETYPE=Cooperlake taskset -c 0,1 /tmp/gemm_libraries openblas libopenblas.so.0 2 split
//   taskset -c 0,1 /tmp/gemm_libraries dnnl libdnnl.so.2 2 split
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef void (*cblas_sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                              int);
typedef int (*dnnl_sgemm_t)(char, char, long, long, long, float, const float*, long, const float*, long, float, float*,
                            long);
static cblas_sgemm_t cs;
static dnnl_sgemm_t ds;
static const int n = 2000;
static float *a, *b, *c;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void piece(long n0, long n1) {
  if (ds)
    ds('N', 'N', n, n1 - n0, n, 1.f, a, n, b + n0, n, 0.f, c + n0, n);
  else
    cs(101, 111, 111, n, n1 - n0, n, 1.f, a, n, b + n0, n, 0.f, c + n0, n);
}
struct arg {
  long n0, n1;
};
static void* run(void* p) {
  struct arg* r = p;
  piece(r->n0, r->n1);
  return 0;
}
int main(int argc, char** argv) {
  if (argc != 5 || atoi(argv[3]) < 1 || atoi(argv[3]) > 64 || (strcmp(argv[4], "split") && strcmp(argv[4], "lib"))) {
    fprintf(stderr, "usage: gemm_libraries openblas|dnnl LIBRARY THREADS(1-64) split|lib\n");
    return 2;
  }
  const char* kind = argv[1];
  const char* path = argv[2];
  int threads = atoi(argv[3]);
  int split = !strcmp(argv[4], "split");
  if (split) setenv("OMP_NUM_THREADS", "1", 1);  // libgomp reads it when it loads
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("%s: %s\n", kind, dlerror());
    return 1;
  }
  a = malloc(4L * n * n);
  b = malloc(4L * n * n);
  c = malloc(4L * n * n);
  for (long i = 0; i < (long)n * n; ++i) {
    a[i] = (i % 7) * 0.1f;
    b[i] = (i % 5) * 0.2f;
    c[i] = 0;
  }
  if (!strcmp(kind, "dnnl")) {
    ds = (dnnl_sgemm_t)dlsym(h, "dnnl_sgemm");
    if (!ds) {
      printf("%s: no dnnl_sgemm in %s\n", kind, path);
      return 1;
    }
    void (*omp)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (!omp) {
      void* g = dlopen("libgomp.so.1", RTLD_NOW);
      omp = g ? (void (*)(int))dlsym(g, "omp_set_num_threads") : 0;
    }
    if (!split && omp) omp(threads);
  } else {
    cs = (cblas_sgemm_t)dlsym(h, "cblas_sgemm");
    if (!cs || !dlsym(h, "openblas_set_num_threads")) {
      printf("%s: no cblas_sgemm / openblas_set_num_threads in %s\n", kind, path);
      return 1;
    }
    ((void (*)(int))dlsym(h, "openblas_set_num_threads"))(split ? 1 : threads);
  }
  double best = 1e9, sum = 0;
  int reps = 15;
  for (int r = 0; r < reps + 2; ++r) {
    double t0 = now();
    if (!split)
      piece(0, n);
    else {
      pthread_t th[64];
      struct arg ar[64];
      long step = ((n + threads - 1) / threads + 15) / 16 * 16;
      int k = 0;
      for (long p = 0; p < n; p += step, ++k) {
        ar[k].n0 = p;
        ar[k].n1 = p + step < n ? p + step : n;
        pthread_create(&th[k], 0, run, &ar[k]);
      }
      for (int i = 0; i < k; ++i) pthread_join(th[i], 0);
    }
    double t = now() - t0;
    if (r >= 2) {
      if (t < best) best = t;
      sum += t;
    }
  }
  double f = 2.0 * n * n * n;
  printf("%-8s %-5s %d threads: best %.1f GFLOP/s, mean %.1f (c[7]=%g)\n", kind, split ? "split" : "lib", threads,
         f / best / 1e9, f / (sum / reps) / 1e9, c[7]);
  return 0;
}
