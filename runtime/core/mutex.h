// A mutex for the locks every op takes on the push path (the engine's and the caching allocator's).
// Uncontended, lock is one inline compare-exchange and unlock one exchange; std::mutex costs a
// call into pthread (type checks, elision checks) each way, about 60 instructions per lock and
// unlock, paid twice per tiny op. Contended, it spins briefly and then sleeps in the kernel
// (std::atomic::wait, a futex on Linux), so unlike SpinLock it may be held across a backend call
// that blocks (a Vulkan submission, a segment allocation). Not recursive; no try_lock timeouts.
//
// The classic three-state futex mutex: 0 free, 1 held, 2 held and a sleeper may be waiting. Only an
// unlock that finds 2 pays for a wake-up.
#pragma once
#include <atomic>
#include <cstdint>

namespace braid {

class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() noexcept {
    uint32_t free = 0;
    if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_contended();
  }
  bool try_lock() noexcept {
    uint32_t free = 0;
    return state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  void lock_contended() noexcept {
    // Critical sections are short: a brief spin usually sees the holder leave without a sleep.
    for (int spin = 0; spin < 64; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      uint32_t free = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed))
        return;
    }
    // Mark the lock contended (2) whenever we may sleep, so the holder's unlock wakes a sleeper. A
    // thread that takes the lock this way leaves it at 2: at worst one unneeded wake-up later.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  std::atomic<uint32_t> state_{0};
};

}  // namespace braid
