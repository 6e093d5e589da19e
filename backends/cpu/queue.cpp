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
    stopping_.store(true);
  }
  cv_.notify_one();
  thread_.join();
}

braid_status braid_backend_queue_t::submit(const braid_work& work, const char** why) {
  if (stopping_.load(std::memory_order_relaxed)) {
    *why = "queue is being destroyed";
    return BRAID_ERR_INVALID_STATE;
  }
  // The common case builds the item straight in its ring slot. A malformed submission that already
  // claimed a slot leaves a blank item there (it runs nothing) and is refused all the same.
  braid_status status = BRAID_OK;
  auto fill = [&](braid::cpu::WorkItem& slot) noexcept {
    status = braid::cpu::make_work_item(work, slot, why);
    if (status != BRAID_OK) slot = braid::cpu::WorkItem{};
  };
  if (!spilling_.load() && ring_.try_emplace(fill)) {
    // The ring's publishing store is seq_cst, as is this load and the queue thread's store of
    // parked_ before its last check: either it sees the item, or we see it parked and wake it.
    // The wake-up takes mu_ so it cannot fall between that check and the sleep.
    if (status == BRAID_OK && parked_.load()) {
      std::lock_guard lock(mu_);
      cv_.notify_one();
    }
    return status;
  }
  std::lock_guard lock(mu_);
  if (spilling_.load() || !ring_.try_emplace(fill)) {
    braid::cpu::WorkItem item;
    fill(item);
    if (status != BRAID_OK) return status;
    overflow_.push(std::move(item));
    spilling_.store(true);
  }
  if (status == BRAID_OK && parked_.load()) cv_.notify_one();
  return status;
}

bool braid_backend_queue_t::next(braid::cpu::WorkItem& item) noexcept {
  for (;;) {
    if (!batch_.empty()) {
      item = batch_.pop();
      return true;
    }
    if (ring_.ready()) {
      ring_.pop(item);
      return true;
    }
    // The overflow comes after everything claimed in the ring before the spill began. A producer may
    // still be filling the slot at the head while later slots are published (the ring then is not
    // ready but not drained either): running the overflow now would put a spilling thread's later
    // items before its earlier ones in those slots. So wait for the ring to drain first; the filling
    // producer publishes within a few instructions, and nothing new enters the ring from a thread
    // that saw the spill.
    if (spilling_.load()) {
      if (!ring_.drained()) {
        __builtin_ia32_pause();
        continue;
      }
      std::lock_guard lock(mu_);
      std::swap(batch_, overflow_);
      spilling_.store(false);
      continue;
    }
    // Tiny ops arrive microseconds apart: sleeping between them would cost a futex wake-up (several
    // microseconds) per op on both sides, so the thread spins for a short while before it parks.
    constexpr auto kSpin = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0; !has_work(); ++i) {
      __builtin_ia32_pause();
      if ((i & 255) == 255 && std::chrono::steady_clock::now() > until) break;
    }
    if (has_work()) continue;
    std::unique_lock lock(mu_);
    parked_.store(true);
    cv_.wait(lock, [this] { return has_work() || stopping_.load(); });
    parked_.store(false);
    if (!has_work()) return false;  // stopping and drained
  }
}

void braid_backend_queue_t::loop() noexcept {
  if (kind_ == BRAID_QUEUE_COMPUTE)
    device_.pin_this_thread();
  else
    braid::cpu::CorePinner::exempt_this_thread();  // a copy engine: core_pinning.h
  braid::cpu::WorkItem item;
  while (next(item)) braid::cpu::run_work_item(item, device_);
}
