// FUSED_ELEMENTWISE (graph mode's fused chains), the launch half: each program's kernel, compiled by
// NVRTC for the device's architecture (fused_codegen.h), is loaded with cudaLibraryLoadData and cached
// by program and architecture for the process. The kernel calls the element functions of the separate
// UNARY and BINARY kernels (float_ops.cuh) without fma contraction, so a chain rounds as the separate
// kernels do, each of which rounds its one operation.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include "buffer.h"
#include "device.h"
#include "fused_codegen.h"
#include "fused_program.h"
#include "launch.h"

namespace braid::cuda {
namespace {

struct Cached {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
};

std::mutex g_cache_mu;
// Libraries are never unloaded: a kernel may be in flight until the process ends.
std::unordered_map<std::string, Cached>& cache() {
  static std::unordered_map<std::string, Cached> c;
  return c;
}

}  // namespace

namespace kern {

braid_status fused_elementwise(const braid_kernel_call& c, KernelEnv& env, std::string& msg) {
  plugin::FusedProgram program;
  if (!program.decode(c)) {
    msg = "cuda backend: fused_elementwise: invalid program";
    return BRAID_ERR_INVALID_ARGUMENT;
  }
  const braid_dtype dtype = c.outputs[0].dtype;
  int major = 0, minor = 0;
  const int ordinal = env.device->ordinal();
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();  // or the thread's next launch would report this failure as its own
    msg = "cuda backend: fused_elementwise: cannot read the device's compute capability";
    return BRAID_ERR_DEVICE;
  }
  const std::string arch = "compute_" + std::to_string(major * 10 + minor);
  const std::string key = program.key(dtype) + "@" + arch;
  cudaKernel_t kernel = nullptr;
  {
    std::lock_guard lock(g_cache_mu);
    if (auto it = cache().find(key); it != cache().end()) kernel = it->second.kernel;
  }
  if (kernel == nullptr) {
    // Compiled outside the lock (tens of milliseconds); a second thread compiling the same program
    // keeps the first one's kernel.
    std::string error;
    const std::string ptx = compile_fused_ptx(fused_cuda_source(program, dtype), arch, error);
    if (ptx.empty()) {
      msg = "cuda backend: fused_elementwise: " + error;
      return BRAID_ERR_KERNEL;
    }
    Cached made;
    if (cudaError_t e = cudaLibraryLoadData(&made.library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
        e != cudaSuccess) {
      (void)cudaGetLastError();
      msg = std::string("cuda backend: fused_elementwise: cudaLibraryLoadData: ") + cudaGetErrorString(e);
      return BRAID_ERR_KERNEL;
    }
    if (cudaError_t e = cudaLibraryGetKernel(&made.kernel, made.library, "braid_fused"); e != cudaSuccess) {
      (void)cudaGetLastError();
      msg = std::string("cuda backend: fused_elementwise: cudaLibraryGetKernel: ") + cudaGetErrorString(e);
      (void)cudaLibraryUnload(made.library);
      return BRAID_ERR_KERNEL;
    }
    std::lock_guard lock(g_cache_mu);
    auto [it, inserted] = cache().emplace(key, made);
    if (!inserted) (void)cudaLibraryUnload(made.library);
    kernel = it->second.kernel;
  }

  const braid_buffer_view& o = c.outputs[0];
  int64_t n = 1;
  for (int d = 0; d < o.ndim; ++d) n *= o.shape[d];
  if (n == 0) return BRAID_OK;
  auto launch = [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    FusedArgs<T> a{};
    a.n = n;
    a.nd = o.ndim;
    for (int d = 0; d < o.ndim; ++d) {
      a.shape[d] = o.shape[d];
      for (int k = 0; k < program.inputs; ++k) a.strides[k][d] = c.inputs[k].strides[d];
      a.strides[BRAID_KERNEL_MAX_INPUTS][d] = o.strides[d];
    }
    for (int k = 0; k < program.inputs; ++k)
      a.in[k] = reinterpret_cast<const T*>(static_cast<const char*>(c.inputs[k].buffer->ptr) + c.inputs[k].byte_offset);
    a.out = reinterpret_cast<T*>(static_cast<char*>(o.buffer->ptr) + o.byte_offset);
    for (int s = 0; s < 8; ++s) a.f[s] = static_cast<T>(c.f[s]);
    void* args[] = {&a};
    const int64_t blocks = std::clamp<int64_t>((n + 255) / 256, 1, 65535 * 8);
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(blocks)), dim3(256), args,
                            0, env.stream);
  };
  const cudaError_t e = dtype == BRAID_FLOAT64 ? launch(double{}) : launch(float{});
  if (e == cudaSuccess) return BRAID_OK;
  (void)cudaGetLastError();
  msg = std::string("fused_elementwise: ") + cudaGetErrorString(e);
  return BRAID_ERR_KERNEL;
}

}  // namespace kern
}  // namespace braid::cuda
