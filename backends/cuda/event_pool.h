// Recycled CUDA events of one device. Events are created with cudaEventBlockingSync, so a host thread
// that synchronises on one sleeps in the driver instead of spinning a core, and DisableTiming, which
// makes record/wait cheaper. Shared (shared_ptr) because a semaphore may hold events after its device
// closed.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

namespace braid::cuda {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A fresh or recycled event, or nullptr if CUDA cannot create one.
  cudaEvent_t get();
  void put(cudaEvent_t e);

 private:
  int device_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace braid::cuda
