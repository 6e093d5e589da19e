// A lock for critical sections of a few dozen instructions on the op-push path (the handle and slot
// pools). Uncontended it costs one atomic exchange and one plain store, against a pthread mutex's
// call, compare-exchange and unlock; at a few locks per tiny op that difference is measurable. Under
// contention it spins briefly, then yields, so a holder preempted on a busy machine is not starved
// by its waiters. Never hold it across anything that blocks or allocates from the backend.
#pragma once
#include <atomic>
#include <thread>

namespace braid {

class SpinLock {
 public:
  void lock() noexcept {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; flag_.load(std::memory_order_relaxed);) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() noexcept {
    return !flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace braid
