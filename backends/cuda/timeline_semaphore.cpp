#include "timeline_semaphore.h"

#include <algorithm>
#include <chrono>
#include <utility>

braid_backend_semaphore_t::~braid_backend_semaphore_t() {
  std::vector<Notification> orphans;
  braid_status status;
  std::deque<Recorded> events;
  {
    std::unique_lock lock(mu_);
    if (status_ == BRAID_OK) status_ = BRAID_ERR_INVALID_STATE;
    status = status_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return waiters_ == 0; });
    orphans.swap(pending_);
    events.swap(events_);
  }
  for (Recorded& r : events) r.pool->put(r.event);
  for (const Notification& n : orphans) n.fn(n.user, status);
}

braid_status braid_backend_semaphore_t::query(uint64_t* value) {
  std::lock_guard lock(mu_);
  *value = value_;
  return status_;
}

void braid_backend_semaphore_t::signal(uint64_t value) {
  std::vector<Notification> ready;
  std::vector<Recorded> done;
  {
    std::lock_guard lock(mu_);
    if (value <= value_) return;
    value_ = value;
    while (!events_.empty() && events_.front().value <= value) {
      done.push_back(std::move(events_.front()));
      events_.pop_front();
    }
    auto split =
        std::partition(pending_.begin(), pending_.end(), [&](const Notification& n) { return n.value > value; });
    ready.assign(split, pending_.end());
    pending_.erase(split, pending_.end());
    if (waiters_ > 0) cv_.notify_all();
  }
  for (Recorded& r : done) r.pool->put(r.event);
  for (const Notification& n : ready) n.fn(n.user, BRAID_OK);
}

braid_status braid_backend_semaphore_t::wait(uint64_t value, uint64_t timeout_ns) {
  std::unique_lock lock(mu_);
  ++waiters_;
  auto done = [&] { return value_ >= value || status_ != BRAID_OK; };
  bool ok = true;
  // Timeouts beyond ~146 years are forever; this also keeps now() + timeout from overflowing.
  constexpr uint64_t kForever = uint64_t(1) << 62;
  if (timeout_ns >= kForever) {
    cv_.wait(lock, done);
  } else {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(timeout_ns));
    ok = cv_.wait_until(lock, deadline, done);
  }
  --waiters_;
  if (waiters_ == 0) cv_.notify_all();  // a destructor may be waiting for the last waiter
  if (status_ != BRAID_OK) return status_;
  return ok ? BRAID_OK : BRAID_ERR_TIMEOUT;
}

void braid_backend_semaphore_t::notify(uint64_t value, void (*fn)(void*, braid_status), void* user) {
  braid_status now;
  {
    std::lock_guard lock(mu_);
    if (value_ < value && status_ == BRAID_OK) {
      pending_.push_back({value, fn, user});
      return;
    }
    now = status_;
  }
  fn(user, now);
}

void braid_backend_semaphore_t::fail(braid_status status) {
  std::vector<Notification> ready;
  {
    std::lock_guard lock(mu_);
    if (status_ != BRAID_OK) return;
    status_ = status;
    ready.swap(pending_);
    cv_.notify_all();
  }
  for (const Notification& n : ready) n.fn(n.user, status);
}

bool braid_backend_semaphore_t::add_event(uint64_t value, cudaEvent_t event,
                                          std::shared_ptr<braid::cuda::EventPool> pool) {
  std::lock_guard lock(mu_);
  if (value <= value_) return false;  // already reached: nobody will wait on the event
  // Queues signal in ascending order as a rule; insert in place if not.
  auto it = std::find_if(events_.begin(), events_.end(), [&](const Recorded& r) { return r.value > value; });
  events_.insert(it, Recorded{value, event, std::move(pool)});
  if (waiters_ > 0) cv_.notify_all();
  return true;
}

braid_status braid_backend_semaphore_t::stream_wait(cudaStream_t stream, uint64_t value,
                                                    const std::atomic<bool>& stop) {
  std::unique_lock lock(mu_);
  ++waiters_;
  braid_status result = BRAID_OK;
  for (;;) {
    if (status_ != BRAID_OK) {
      result = status_;
      break;
    }
    if (value_ >= value) break;
    auto it = std::find_if(events_.begin(), events_.end(), [&](const Recorded& r) { return r.value >= value; });
    if (it != events_.end()) {
      if (cudaStreamWaitEvent(stream, it->event, 0) != cudaSuccess) {
        cudaGetLastError();
        result = BRAID_ERR_DEVICE;
      }
      break;
    }
    if (stop.load()) {
      result = BRAID_ERR_INVALID_STATE;
      break;
    }
    // Woken by signal/add_event/fail; the timeout only bounds how late a closing queue notices stop.
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  --waiters_;
  if (waiters_ == 0) cv_.notify_all();
  return result;
}
