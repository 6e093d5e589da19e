// Makes a CUDA device current for a scope and restores the caller's afterwards. The plugin's entry
// points run on the application's threads, whose current device belongs to the application (or to
// another library): changing it behind their back breaks their next CUDA call. The plugin's own
// threads (queue submit/complete) set their device once and need no guard.
#pragma once
#include <cuda_runtime_api.h>

namespace braid::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    ok_ = previous_ == device || cudaSetDevice(device) == cudaSuccess;
    if (!ok_) cudaGetLastError();
  }
  ~DeviceGuard() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = false;
};

}  // namespace braid::cuda
