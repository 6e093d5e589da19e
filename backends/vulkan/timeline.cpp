#include "timeline.h"

#include <chrono>

braid_backend_semaphore_t::~braid_backend_semaphore_t() {
  // Notifications still pending are told the semaphore is gone, so their owners can free what they hold.
  for (auto& p : pending_) p.fn(p.user, BRAID_ERR_INVALID_STATE);
}

braid_status braid_backend_semaphore_t::query(uint64_t* value) {
  std::lock_guard lock(mu_);
  *value = value_;
  return failed_;
}

void braid_backend_semaphore_t::signal(uint64_t value) {
  std::vector<Pending> due;
  {
    std::lock_guard lock(mu_);
    if (value <= value_) return;
    value_ = value;
    for (size_t i = 0; i < pending_.size();) {
      if (pending_[i].value <= value) {
        due.push_back(pending_[i]);
        pending_[i] = pending_.back();
        pending_.pop_back();
      } else {
        ++i;
      }
    }
  }
  cv_.notify_all();
  for (auto& p : due) p.fn(p.user, BRAID_OK);  // outside the lock: a callback may submit more work
}

braid_status braid_backend_semaphore_t::wait(uint64_t value, uint64_t timeout_ns) {
  std::unique_lock lock(mu_);
  auto done = [&] { return value_ >= value || failed_ != BRAID_OK; };
  if (timeout_ns == UINT64_MAX) {
    cv_.wait(lock, done);
  } else if (!cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), done)) {
    return BRAID_ERR_TIMEOUT;
  }
  return value_ >= value ? BRAID_OK : failed_;
}

void braid_backend_semaphore_t::notify(uint64_t value, void (*fn)(void*, braid_status), void* user) {
  braid_status now;
  {
    std::lock_guard lock(mu_);
    if (value_ < value && failed_ == BRAID_OK) {
      pending_.push_back({value, fn, user});
      return;
    }
    now = value_ >= value ? BRAID_OK : failed_;
  }
  fn(user, now);
}

void braid_backend_semaphore_t::fail(braid_status status) {
  std::vector<Pending> due;
  {
    std::lock_guard lock(mu_);
    if (failed_ == BRAID_OK) failed_ = status == BRAID_OK ? BRAID_ERR_INTERNAL : status;
    due.swap(pending_);
  }
  cv_.notify_all();
  for (auto& p : due) p.fn(p.user, status);
}
