#include "queue.h"

#include <pthread.h>

#include <chrono>

#include "device.h"

braid_backend_queue_t::braid_backend_queue_t(braid_backend_device_t& device, braid_queue_kind kind, const char* name)
    : device_(device), kind_(kind), thread_([this] { loop(); }) {
  pthread_setname_np(thread_.native_handle(), name);  // best effort: a failure only loses the label
}

braid_backend_queue_t::~braid_backend_queue_t() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

braid_status braid_backend_queue_t::submit(const braid_work& work, const char** why) {
  // Validate and copy outside the lock; only the move into the ring is serialised.
  braid::cpu::WorkItem item;
  if (braid_status s = braid::cpu::make_work_item(work, item, why); s != BRAID_OK) return s;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      *why = "queue is being destroyed";
      return BRAID_ERR_INVALID_STATE;
    }
    fifo_.push(std::move(item));
    queued_.store(fifo_.size(), std::memory_order_release);
  }
  // A thread that parked did so under mu_ before our push, so it is visible here; one that has not
  // parked yet will see the item when it checks under mu_.
  if (parked_.load()) cv_.notify_one();
  return BRAID_OK;
}

bool braid_backend_queue_t::wait_for_work(std::unique_lock<std::mutex>& lock) noexcept {
  // Tiny ops arrive microseconds apart: sleeping between them would cost a futex wake-up (several
  // microseconds) per op on both sides, so the thread spins for a short while before it parks.
  constexpr auto kSpin = std::chrono::microseconds(50);
  if (fifo_.empty() && !stopping_) {
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0; queued_.load(std::memory_order_acquire) == 0; ++i) {
      __builtin_ia32_pause();
      if ((i & 255) == 255 && std::chrono::steady_clock::now() > until) break;
    }
    lock.lock();
  }
  if (fifo_.empty() && !stopping_) {
    parked_.store(true);
    cv_.wait(lock, [this] { return !fifo_.empty() || stopping_; });
    parked_.store(false);
  }
  return !fifo_.empty();
}

void braid_backend_queue_t::loop() noexcept {
  for (;;) {
    braid::cpu::WorkItem item;
    {
      std::unique_lock lock(mu_);
      if (!wait_for_work(lock)) return;  // stopping and drained
      item = fifo_.pop();
      queued_.store(fifo_.size(), std::memory_order_release);
    }
    braid::cpu::run_work_item(item, device_);
  }
}
