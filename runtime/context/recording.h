// Autograd's recording switch of one context: on or off per thread (off by default), so a no-grad
// section on one thread never changes what another thread records. It lives with the context, which
// owns it, below autograd/ (the layers point one way: docs/ARCHITECTURE.md). Checked on every op push, so the common
// case (no thread records) is one relaxed atomic load.
#pragma once
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace braid {
struct OpRecorder;
}

namespace braid::autograd {

class Recording {
 public:
  // Autograd's entry points for the ops layer below it (ops/recorder.h), installed by autograd before
  // anything can be recorded; null until then.
  void install(const OpRecorder* r) noexcept { recorder_.store(r, std::memory_order_release); }
  const OpRecorder* recorder() const noexcept { return recorder_.load(std::memory_order_acquire); }

  // Whether any thread records (a hint: the hot-path check before on()).
  bool any() const noexcept { return count_.load(std::memory_order_relaxed) != 0; }
  // Whether the calling thread records.
  bool on() const {
    if (count_.load(std::memory_order_relaxed) == 0) return false;
    const auto self = std::this_thread::get_id();
    std::lock_guard lock(mu_);
    for (auto id : threads_)
      if (id == self) return true;
    return false;
  }
  // Sets the calling thread's switch; returns the previous value.
  bool set(bool enable) {
    const auto self = std::this_thread::get_id();
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < threads_.size(); ++i)
      if (threads_[i] == self) {
        if (!enable) {
          threads_[i] = threads_.back();
          threads_.pop_back();
          count_.fetch_sub(1, std::memory_order_relaxed);
        }
        return true;
      }
    if (enable) {
      threads_.push_back(self);
      count_.fetch_add(1, std::memory_order_relaxed);
    }
    return false;
  }

 private:
  std::atomic<const OpRecorder*> recorder_{nullptr};
  std::atomic<int> count_{0};
  mutable std::mutex mu_;
  std::vector<std::thread::id> threads_;  // threads recording now (a handful at most)
};

// Turns the calling thread's recording off for a scope (backward never records its own ops).
class PauseRecording {
 public:
  explicit PauseRecording(Recording& r) : r_(r), prev_(r.set(false)) {}
  ~PauseRecording() {
    if (prev_) r_.set(true);
  }
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;

 private:
  Recording& r_;
  bool prev_;
};

}  // namespace braid::autograd
