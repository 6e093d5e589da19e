// The backend's timeline semaphores (braid_backend_semaphore). Every signal of one happens on the host:
// by the host API, or by a queue's completion thread once the batch holding the signalling work has
// finished (after work_end, as the ABI requires). So the value, failure state and notifications live
// on the host; the device side is tracked with one Vulkan timeline semaphore per queue (queue.h).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "braid_backend.h"

struct braid_backend_semaphore_t {
  explicit braid_backend_semaphore_t(uint64_t initial) : value_(initial) {}
  ~braid_backend_semaphore_t();

  braid_status query(uint64_t* value);
  void signal(uint64_t value);  // a value not above the current one changes nothing
  braid_status wait(uint64_t value, uint64_t timeout_ns);
  // fn runs once, when value is reached or the semaphore fails (possibly inside this call).
  void notify(uint64_t value, void (*fn)(void*, braid_status), void* user);
  void fail(braid_status status);

 private:
  struct Pending {
    uint64_t value;
    void (*fn)(void*, braid_status);
    void* user;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t value_;
  braid_status failed_ = BRAID_OK;
  std::vector<Pending> pending_;
};
