// The gemm suite's anchor on a cuda device: the same 2000x2000 float32 product through a direct cuBLAS
// call (cublasSgemm, default math = full FP32 like braid's backend unless BRAID_CUDA_TF32=1), timed
// like braid's run (launch, then wait for the result). cudart is static and cuBLAS is dlopen'ed, so
// braid-bench still starts on machines without CUDA; there this anchor is simply not reached.
#include "gemm_cuda.h"

#if BRAID_BENCH_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "stats.h"
#include "timer.h"

namespace braid::bench {
namespace {

struct Blas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuBLAS anchor: ") + what + ": " + cudaGetErrorString(e));
}

// Device buffers freed on every path.
struct DeviceBuffer {
  float* p = nullptr;
  explicit DeviceBuffer(size_t n) {
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

std::optional<CudaGemm> cuda_gemm_anchor(int ordinal, int64_t n, const std::vector<float>& a,
                                         const std::vector<float>& b, const std::function<double()>& braid_run,
                                         int warmup, int repeat) {
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  Blas blas;
  blas.create = reinterpret_cast<decltype(blas.create)>(dlsym(lib, "cublasCreate_v2"));
  blas.destroy = reinterpret_cast<decltype(blas.destroy)>(dlsym(lib, "cublasDestroy_v2"));
  blas.sgemm = reinterpret_cast<decltype(blas.sgemm)>(dlsym(lib, "cublasSgemm_v2"));
  if (blas.create == nullptr || blas.destroy == nullptr || blas.sgemm == nullptr) return std::nullopt;
  cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
  const size_t count = static_cast<size_t>(n * n);
  DeviceBuffer da(count), db(count), dc(count);
  cuda_check(cudaMemcpy(da.p, a.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  cuda_check(cudaMemcpy(db.p, b.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  cublasHandle_t h = nullptr;
  if (blas.create(&h) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  const double flop = 2.0 * double(n) * double(n) * double(n);
  const int dim = static_cast<int>(n);
  auto blas_run = [&] {
    const float one = 1.0f, zero = 0.0f;
    tools::Stopwatch sw;
    // Row-major C = A B is column-major C^T = B^T A^T: pass B first.
    blas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, db.p, dim, da.p, dim, &zero, dc.p, dim);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return flop / sw.seconds() * 1e-9;
  };
  for (int i = 0; i < warmup; ++i) {
    braid_run();
    blas_run();
  }
  const auto [braid_s, blas_s] = tools::measure_interleaved<2>(repeat, {braid_run, blas_run});
  CudaGemm out;
  out.braid_gflops = braid_s.median;
  out.anchor_gflops = blas_s.median;
  out.product.resize(count);
  cuda_check(cudaMemcpy(out.product.data(), dc.p, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  blas.destroy(h);
  return out;
}

}  // namespace braid::bench

#else

namespace braid::bench {
std::optional<CudaGemm> cuda_gemm_anchor(int, int64_t, const std::vector<float>&, const std::vector<float>&,
                                         const std::function<double()>&, int, int) {
  return std::nullopt;
}
}  // namespace braid::bench

#endif
