// OpenBLAS, opened by the plugin itself at run time instead of linked: its load-time constructor
// picks the kernels once, from OPENBLAS_CORETYPE or its own CPU detection, and Debian's 0.3.21 does not
// know CPUs newer than it (Emerald Rapids runs its generic Prescott kernels, a fifth of the sgemm
// speed). Opening it ourselves lets the plugin set the core its kernels should be for first, from the
// CPU's real vector ISA (cpu_features.h). docs/HARDWARE.md says what is chosen and how to override it.
#pragma once
#include <cblas.h>

#include <string>

namespace braid::cpu {

struct BlasLibrary {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;
  decltype(&cblas_dgemv) dgemv = nullptr;
  decltype(&openblas_get_num_threads) get_num_threads = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  std::string core;       // the kernels OpenBLAS runs (openblas_get_corename), "" if it cannot say
  std::string requested;  // OPENBLAS_CORETYPE as OpenBLAS read it: BRAID_BLAS_CORETYPE, braid's choice, or ""
                          // (then whatever the environment had)
  std::string error;      // why it could not be opened ("" when it was)

  bool ok() const { return error.empty(); }
};

// Opened once, on first use, for the life of the process.
const BlasLibrary& blas();

}  // namespace braid::cpu
