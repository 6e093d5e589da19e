#include "host_semaphore.h"

#include <chrono>
#include <utility>

namespace braid::plugin {

HostSemaphore::~HostSemaphore() {
  std::vector<Notification> orphans;
  braid_status status;
  {
    std::unique_lock lock(mu_);
    destroying_ = true;
    if (status_ == BRAID_OK) status_ = BRAID_ERR_INVALID_STATE;
    status = status_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return waiters_ == 0; });
    orphans.swap(pending_);
  }
  // Outside the lock: a callback may call back into this semaphore (query, notify), which still works
  // and, being failed, fires at once instead of adding to the list.
  for (const Notification& n : orphans) n.fn(n.user, status);
}

void HostSemaphore::update_watched_locked() noexcept {
  if (waiters_ == 0 && pending_.empty()) word_.fetch_and(~kWatched, std::memory_order_relaxed);
}

braid_status HostSemaphore::query(uint64_t* value) const {
  std::lock_guard lock(mu_);
  *value = this->value();
  return status_;
}

void HostSemaphore::signal(uint64_t value) {
  value = clamp(value);
  // Nobody waiting or watching: publish the value and touch nothing else (release: what the signaller
  // did before is visible to whoever sees the value). Once the exchange succeeds `this` is not used
  // again, so a waiter that sees the value may destroy the semaphore at once.
  uint64_t w = word_.load(std::memory_order_relaxed);
  while ((w & kWatched) == 0) {
    if ((w >> 1) >= value) return;
    if (word_.compare_exchange_weak(w, value << 1, std::memory_order_release, std::memory_order_relaxed)) return;
  }
  std::vector<Notification> ready;
  {
    std::lock_guard lock(mu_);
    w = word_.load(std::memory_order_relaxed);
    if ((w >> 1) >= value) return;
    if (!pending_.empty()) {
      // Reserve before changing anything, so running out of memory leaves the semaphore untouched.
      size_t n = 0;
      for (const Notification& p : pending_) n += p.value <= value ? 1 : 0;
      ready.reserve(n);
    }
    // The bit may have been cleared since we looked, letting lock-free signals in: keep the maximum.
    while ((w >> 1) < value && !word_.compare_exchange_weak(w, (value << 1) | (w & kWatched), std::memory_order_release,
                                                            std::memory_order_relaxed)) {}
    // Under the lock: once we unlock, a concurrent destructor may free the condition variable. Only
    // when someone waits.
    if (waiters_ > 0) cv_.notify_all();
    if (!pending_.empty()) {
      auto keep = pending_.begin();
      for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->value <= value) {
          ready.push_back(*it);
        } else {
          *keep++ = *it;
        }
      }
      pending_.erase(keep, pending_.end());
    }
    update_watched_locked();
  }
  // Outside the lock and without touching `this`: a callback may submit work, signal other semaphores,
  // or even destroy this one.
  for (const Notification& n : ready) n.fn(n.user, BRAID_OK);
}

void HostSemaphore::fail(braid_status status) {
  if (status == BRAID_OK) status = BRAID_ERR_INTERNAL;
  std::vector<Notification> fired;
  {
    std::lock_guard lock(mu_);
    if (status_ != BRAID_OK) return;
    status_ = status;
    cv_.notify_all();
    fired.swap(pending_);
    update_watched_locked();
  }
  for (const Notification& n : fired) n.fn(n.user, status);
}

braid_status HostSemaphore::wait(uint64_t value, uint64_t timeout_ns) {
  value = clamp(value);
  std::unique_lock lock(mu_);
  auto done = [&] { return status_ != BRAID_OK || this->value() >= value; };
  if (!done()) {
    ++waiters_;  // from here the destructor waits for this thread to leave, the spin below included
    // Timeouts beyond ~146 years are forever; this also keeps now() + timeout from overflowing.
    constexpr uint64_t kForever = uint64_t{1} << 62;
    // A host thread waiting for the op it just pushed (a synchronous loop: y = x + 1; y.wait_to_read())
    // usually needs a few microseconds: sleeping would add a futex wake-up of about as much, so spin
    // for a short while first, without the lock (a signal takes no lock while nobody watches).
    constexpr auto kSpin = std::chrono::microseconds(20);
    if (timeout_ns >= uint64_t{1000000}) {
      lock.unlock();
      const auto spin_until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; this->value() < value; ++i) {
        __builtin_ia32_pause();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > spin_until) break;
      }
      lock.lock();
    }
    if (!done()) {
      // Watched from here: a signal either landed before this (the predicate below sees it) or takes
      // the locked path and wakes us.
      word_.fetch_or(kWatched, std::memory_order_acq_rel);
      if (timeout_ns >= kForever) {
        cv_.wait(lock, done);
      } else {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(timeout_ns));
        cv_.wait_until(lock, deadline, done);
      }
    }
    --waiters_;
    update_watched_locked();
    if (destroying_ && waiters_ == 0) cv_.notify_all();
  }
  if (status_ != BRAID_OK) return status_;
  return this->value() >= value ? BRAID_OK : BRAID_ERR_TIMEOUT;
}

void HostSemaphore::notify(uint64_t value, NotifyFn fn, void* user) {
  value = clamp(value);
  braid_status status;
  {
    std::lock_guard lock(mu_);
    if (status_ == BRAID_OK && this->value() < value) {
      pending_.push_back({value, fn, user});
      // Watched from here; a signal that landed in between is caught by the check below.
      if ((word_.fetch_or(kWatched, std::memory_order_acq_rel) >> 1) < value) return;
      pending_.pop_back();
      update_watched_locked();
    }
    status = status_;
  }
  fn(user, status);
}

}  // namespace braid::plugin
