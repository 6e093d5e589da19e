#include "event_pool.h"

namespace braid::cuda {

EventPool::~EventPool() {
  cudaSetDevice(device_);
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
  if (cudaSetDevice(device_) != cudaSuccess ||
      cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync) != cudaSuccess) {
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
