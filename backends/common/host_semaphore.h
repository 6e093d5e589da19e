// The host side of a timeline semaphore (braid_backend_semaphore): a monotonic uint64 value, a sticky
// failure state, host waits and notifications. Every plugin's semaphore is, or extends, this class
// (backends/vulkan/timeline.h adds the device-side signals; backends/cuda keeps its own event-based one).
// Plugin-side code compiled into each plugin; it includes only abi/braid_backend.h.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "braid_backend.h"

namespace braid::plugin {

// Thread-safe: any thread may signal, fail, wait or register a notification concurrently.
//
// A signal that nobody waits on or watches (the common case: once per op on a queue thread) is one
// compare-exchange on a word holding the value and a "watched" bit, without the mutex: that bit is
// set, under the mutex, while a thread waits or a notification is registered, and a signal that sees
// it takes the locked path. Since both live in one word, a signal either lands before a waiter sets
// the bit (the waiter then sees the value) or fails its exchange and takes the lock (and wakes it).
// Values are therefore 63-bit: anything above 2^63 - 1 (signalled, waited for or watched) counts as
// 2^63 - 1, which no timeline of ops reaches.
class HostSemaphore {
 public:
  using NotifyFn = void (*)(void* user, braid_status status);

  explicit HostSemaphore(uint64_t initial) : word_(clamp(initial) << 1) {}
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

  static constexpr uint64_t kWatched = 1;  // low bit of word_
  static constexpr uint64_t kMaxValue = (uint64_t{1} << 63) - 1;
  static uint64_t clamp(uint64_t v) noexcept { return v > kMaxValue ? kMaxValue : v; }
  uint64_t value() const noexcept { return word_.load(std::memory_order_acquire) >> 1; }
  // Clears the watched bit once nobody waits and nothing is pending. Under mu_.
  void update_watched_locked() noexcept;

  // value << 1 | kWatched. Changed only by atomic read-modify-writes: the lock-free signal's
  // compare-exchange fails whenever the bit was set since it read the word.
  std::atomic<uint64_t> word_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  braid_status status_ = BRAID_OK;
  bool destroying_ = false;
  int waiters_ = 0;  // threads inside wait(); the destructor waits for them to leave
  std::vector<Notification> pending_;
};

}  // namespace braid::plugin
