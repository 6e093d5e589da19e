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
  // bfloat16 and float16 products with float32 accumulation (autocast's MATMUL); NULL where the library
  // lacks it (the plugin then refuses those calls). Typed by hand: cublas_api.h overloads the name in C++.
  using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long, const void*,
                                                  cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                                  long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;
};

// The library, or nullptr with *why set (static string). Thread-safe; loaded once per process and kept
// (unloading it while a handle may live in another plugin instance is not worth the risk).
const CublasLib* cublas_lib(const char** why);

}  // namespace braid::cuda
