// The host side of a timeline semaphore (braid_backend_semaphore): a monotonic uint64 value, a sticky
// failure state, host waits and notifications. Every plugin's semaphore is, or extends, this class
// (backends/vulkan/timeline.h adds the device-side signals; backends/cuda keeps its own event-based one).
// Plugin-side code compiled into each plugin; it includes only abi/braid_backend.h.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "braid_backend.h"

namespace braid::plugin {

// Thread-safe: any thread may signal, fail, wait or register a notification concurrently.
class HostSemaphore {
 public:
  using NotifyFn = void (*)(void* user, braid_status status);

  explicit HostSemaphore(uint64_t initial) : value_(initial) {}
  // Fails the semaphore with BRAID_ERR_INVALID_STATE (unless it already failed), waits until threads
  // blocked in wait() have left, then calls every pending notification once with that status before the
  // memory goes: each fn is called exactly once, so whatever the host tied to `user` is released, and
  // never after free. Waits and notifies that *start* after destruction are the caller's bug.
  ~HostSemaphore();

  HostSemaphore(const HostSemaphore&) = delete;
  HostSemaphore& operator=(const HostSemaphore&) = delete;

  // Current value; the failure status if the semaphore failed (the value is still written).
  braid_status query(uint64_t* value) const;
  // Raises the value; a value not above the current one is ignored (timelines only move forward).
  void signal(uint64_t value);
  // First failure wins; BRAID_OK is not a failure and becomes BRAID_ERR_INTERNAL.
  void fail(braid_status status);
  // Blocks until value is reached (BRAID_OK), the semaphore fails (its status), or timeout_ns passes
  // (BRAID_ERR_TIMEOUT). UINT64_MAX waits forever. A failed semaphore reports failure even for values
  // reached before it failed: the ABI makes failure sticky.
  braid_status wait(uint64_t value, uint64_t timeout_ns);
  // Calls fn(user, status) once when value is reached (BRAID_OK) or the semaphore fails; inside this
  // call if that has already happened, else on the thread that signals or fails.
  void notify(uint64_t value, NotifyFn fn, void* user);

 private:
  struct Notification {
    uint64_t value;
    NotifyFn fn;
    void* user;
  };

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t value_;
  braid_status status_ = BRAID_OK;
  bool destroying_ = false;
  int waiters_ = 0;  // threads inside wait(); the destructor waits for them to leave
  std::vector<Notification> pending_;
};

}  // namespace braid::plugin
