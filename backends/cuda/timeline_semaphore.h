// A timeline semaphore over CUDA events (the "pooled-event timeline"): a host-side value that only
// grows, plus the events that queues recorded for values not yet reached. A device-side wait for value
// v becomes cudaStreamWaitEvent on the first event recorded for a value >= v; a host wait sleeps on a
// condition variable that the queues' completion threads signal. Failure poisons waits and notifies.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "braid_backend.h"
#include "event_pool.h"

struct braid_backend_semaphore_t {
 public:
  explicit braid_backend_semaphore_t(uint64_t initial) : value_(initial) {}
  ~braid_backend_semaphore_t();
  braid_backend_semaphore_t(const braid_backend_semaphore_t&) = delete;
  braid_backend_semaphore_t& operator=(const braid_backend_semaphore_t&) = delete;

  braid_status query(uint64_t* value);
  // Raises the value (never lowers it), recycles the events it covers, wakes waiters, fires notifies.
  void signal(uint64_t value);
  braid_status wait(uint64_t value, uint64_t timeout_ns);
  void notify(uint64_t value, void (*fn)(void*, braid_status), void* user);
  void fail(braid_status status);

  // Device side. A queue that recorded `event` on its stream for `value` registers it here; the event
  // goes back to `pool` once the value is reached. Returns false (event not taken: the caller keeps
  // and recycles it) when the value is already reached.
  bool add_event(uint64_t value, cudaEvent_t event, std::shared_ptr<braid::cuda::EventPool> pool);
  // Makes `stream` wait for value. Blocks (without spinning) while the value is neither reached nor
  // covered by a recorded event, i.e. until a producer on another queue or the host gets that far, or
  // `stop` is set. The event is used under the lock, so it cannot be recycled in between.
  braid_status stream_wait(cudaStream_t stream, uint64_t value, const std::atomic<bool>& stop);

 private:
  struct Recorded {
    uint64_t value;
    cudaEvent_t event;
    std::shared_ptr<braid::cuda::EventPool> pool;
  };
  struct Notification {
    uint64_t value;
    void (*fn)(void*, braid_status);
    void* user;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t value_;
  braid_status status_ = BRAID_OK;
  int waiters_ = 0;
  std::deque<Recorded> events_;  // ascending value
  std::vector<Notification> pending_;
};

using Semaphore = braid_backend_semaphore_t;
