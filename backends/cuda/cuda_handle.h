// Owners of CUDA handles (a stream, a memory pool, pinned host memory) that destroy them with their
// device made current. They are what makes the device's and the queue's constructors exception-safe:
// a constructor that throws half-way never runs its class's destructor, but it does destroy the
// members already made, so every handle created before the failure is given back instead of leaked.
#pragma once
#include <cuda_runtime_api.h>

#include <utility>

#include "device_guard.h"

namespace braid::cuda {

template <typename Handle, cudaError_t (*Destroy)(Handle)>
class CudaHandle {
 public:
  CudaHandle() = default;
  CudaHandle(int device, Handle h) noexcept : device_(device), h_(h) {}
  ~CudaHandle() { reset(); }
  CudaHandle(CudaHandle&& o) noexcept : device_(o.device_), h_(std::exchange(o.h_, nullptr)) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;

  Handle get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

  // Destroys the handle now (an owner whose destructor must order the destruction of several).
  void reset() noexcept {
    if (h_ == nullptr) return;
    const DeviceGuard guard(device_);
    if (Destroy(h_) != cudaSuccess) cudaGetLastError();  // nothing to report to at teardown
    h_ = nullptr;
  }

 private:
  int device_ = 0;
  Handle h_ = nullptr;
};

using StreamHandle = CudaHandle<cudaStream_t, cudaStreamDestroy>;
using PoolHandle = CudaHandle<cudaMemPool_t, cudaMemPoolDestroy>;
using PinnedHostMemory = CudaHandle<void*, cudaFreeHost>;  // from cudaHostAlloc

}  // namespace braid::cuda
