/* braid-mpi-allreduce: the second anchor of `braid-bench allreduce --ranks N`: Open MPI's
 * MPI_Allreduce (float32 sum, in place) with the same sizes, repeats and timing as braid's side. Rank 0
 * prints one JSON line per size, {"bytes": B, "seconds": S} (the median of REPEAT runs after a warm-up).
 *
 *   mpirun -np N braid-mpi-allreduce REPEAT */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int repeat = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 5;
  double* times = malloc(sizeof(double) * (size_t)repeat);
  for (uint64_t bytes = 4u << 10; bytes <= (256u << 20); bytes *= 4) {
    const size_t n = bytes / sizeof(float);
    float* data = malloc(bytes);
    for (size_t k = 0; k < n; ++k) data[k] = 1.0f;
    for (int i = 0; i < repeat + 1; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (i > 0) times[i - 1] = MPI_Wtime() - t0;
    }
    qsort(times, (size_t)repeat, sizeof(double), by_value);
    if (rank == 0) printf("{\"bytes\": %llu, \"seconds\": %.9g}\n", (unsigned long long)bytes, times[repeat / 2]);
    fflush(stdout);
    free(data);
  }
  free(times);
  MPI_Finalize();
  return 0;
}
