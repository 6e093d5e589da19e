// The gemm suite's cuBLAS anchor for a cuda device (gemm_cuda.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "bench.h"

namespace braid::bench {

struct CudaGemm {
  double braid_gflops = 0, anchor_gflops = 0;  // medians of interleaved runs
  std::vector<float> product;                  // the anchor's C, for the correctness check
};

// Times braid_run against a direct cublasSgemm of a (n x n) times b on CUDA device `ordinal`;
// nullopt when braid-bench was built without the CUDA toolkit or cuBLAS cannot be loaded.
std::optional<CudaGemm> cuda_gemm_anchor(int ordinal, int64_t n, const std::vector<float>& a,
                                         const std::vector<float>& b, const std::function<double()>& braid_run,
                                         int warmup, int repeat);

}  // namespace braid::bench
