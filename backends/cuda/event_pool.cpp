#include "event_pool.h"

#include "device_guard.h"

namespace braid::cuda {

EventPool::~EventPool() {
  const DeviceGuard guard(device_);
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::get() {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  const DeviceGuard guard(device_);
  if (!guard.ok() || cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void EventPool::put(cudaEvent_t e) {
  if (e == nullptr) return;
  try {
    std::lock_guard lock(mu_);
    free_.push_back(e);
  } catch (...) {
    cudaEventDestroy(e);
  }
}

}  // namespace braid::cuda
