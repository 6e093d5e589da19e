#include "queue.h"

#include <pthread.h>

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
  }
  cv_.notify_one();
  return BRAID_OK;
}

void braid_backend_queue_t::loop() noexcept {
  for (;;) {
    braid::cpu::WorkItem item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !fifo_.empty() || stopping_; });
      if (fifo_.empty()) return;  // stopping and drained
      item = fifo_.pop();
    }
    braid::cpu::run_work_item(item, device_);
  }
}
