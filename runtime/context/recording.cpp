#include "context/recording.h"

#include <algorithm>

namespace braid::autograd {
namespace {

// This thread's serial number: unique for the process's lifetime, unlike std::thread::id.
uint64_t this_thread_serial() noexcept {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t serial = next.fetch_add(1, std::memory_order_relaxed);
  return serial;
}

// The contexts the calling thread has turned recording on in; it leaves them when it ends.
class JoinedRecordings {
 public:
  ~JoinedRecordings() {
    for (const auto& weak : joined_)
      if (auto threads = weak.lock()) threads->leave(this_thread_serial());
  }
  void add(const std::shared_ptr<RecordingThreads>& threads) {
    std::erase_if(joined_, [](const std::weak_ptr<RecordingThreads>& w) { return w.expired(); });
    for (const auto& weak : joined_)
      if (weak.lock() == threads) return;
    joined_.push_back(threads);
  }

 private:
  std::vector<std::weak_ptr<RecordingThreads>> joined_;
};

thread_local JoinedRecordings t_joined;

}  // namespace

bool RecordingThreads::has(uint64_t serial) {
  std::lock_guard lock(mu);
  return std::find(serials.begin(), serials.end(), serial) != serials.end();
}

bool RecordingThreads::leave(uint64_t serial) {
  std::lock_guard lock(mu);
  auto it = std::find(serials.begin(), serials.end(), serial);
  if (it == serials.end()) return false;
  *it = serials.back();
  serials.pop_back();
  count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool Recording::on() const {
  if (threads_->count.load(std::memory_order_relaxed) == 0) return false;
  return threads_->has(this_thread_serial());
}

bool Recording::set(bool enable) {
  const uint64_t self = this_thread_serial();
  if (!enable) return threads_->leave(self);
  {
    std::lock_guard lock(threads_->mu);
    auto& s = threads_->serials;
    if (std::find(s.begin(), s.end(), self) != s.end()) return true;
    s.push_back(self);
    threads_->count.fetch_add(1, std::memory_order_relaxed);
  }
  t_joined.add(threads_);
  return false;
}

}  // namespace braid::autograd
