// cuBLAS, loaded with dlopen when the first device opens, so that the plugin itself links nothing of
// it: a machine with a driver but no cuBLAS still loads the plugin (matmul then fails with a reason).
// The header gives the types and prototypes; decltype of the prototypes types the resolved pointers.
#pragma once
#include <cublas_api.h>

#include <string>

namespace braid::cuda {

struct CublasLib {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
};

// The library, or nullptr with *why set (static string). Thread-safe; loaded once per process and kept
// (unloading it while a handle may live in another plugin instance is not worth the risk).
const CublasLib* cublas_lib(const char** why);

}  // namespace braid::cuda
