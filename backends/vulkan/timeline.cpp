#include "timeline.h"

#include <algorithm>

braid_backend_semaphore_t::~braid_backend_semaphore_t() {
  for (const Watcher& w : watchers_) w.drop(w.user);
}

void braid_backend_semaphore_t::prune_locked(uint64_t host_value) {
  while (!signals_.empty() && signals_.front().value <= host_value) signals_.pop_front();
  for (size_t i = 0; i < watchers_.size();) {
    if (watchers_[i].value <= host_value) {
      watchers_[i].drop(watchers_[i].user);  // its host notification fires (or fired) instead
      watchers_[i] = watchers_.back();
      watchers_.pop_back();
    } else {
      ++i;
    }
  }
}

void braid_backend_semaphore_t::add_device_signal(uint64_t value, const DeviceSignal& at, std::vector<Watcher>& fire) {
  uint64_t host_value = 0;
  if (query(&host_value) != BRAID_OK || host_value >= value) return;  // nobody will wait on the device
  std::lock_guard lock(device_mu_);
  prune_locked(host_value);
  for (size_t i = 0; i < watchers_.size();) {
    if (watchers_[i].value <= value && watchers_[i].device == at.device) {
      fire.push_back(watchers_[i]);
      watchers_[i] = watchers_.back();
      watchers_.pop_back();
    } else {
      ++i;
    }
  }
  // Normally appended (one queue signals in order). A value below the last one (two queues signalling
  // one semaphore) goes in its place, so the list stays sorted and lookups take the earliest signal.
  auto at_pos =
      std::upper_bound(signals_.begin(), signals_.end(), value, [](uint64_t v, const Entry& e) { return v < e.value; });
  signals_.insert(at_pos, Entry{value, at});
}

std::optional<braid_backend_semaphore_t::DeviceSignal> braid_backend_semaphore_t::device_signal(uint64_t value,
                                                                                                VkDevice device) {
  uint64_t host_value = 0;
  if (query(&host_value) != BRAID_OK || host_value >= value) return std::nullopt;
  std::lock_guard lock(device_mu_);
  prune_locked(host_value);
  for (const Entry& e : signals_)
    if (e.value >= value && e.at.device == device) return e.at;
  return std::nullopt;
}

bool braid_backend_semaphore_t::watch(const Watcher& w) {
  uint64_t host_value = 0;
  if (query(&host_value) != BRAID_OK || host_value >= w.value) return false;
  std::lock_guard lock(device_mu_);
  prune_locked(host_value);
  for (const Entry& e : signals_)
    if (e.value >= w.value && e.at.device == w.device) return false;
  watchers_.push_back(w);
  return true;
}
