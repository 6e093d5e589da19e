// Autograd's recording switch of one context: on or off per thread (off by default), so a no-grad
// section on one thread never changes what another thread records. It lives with the context, which
// owns it, below autograd/ (the layers point one way: docs/ARCHITECTURE.md). Checked on every op push, so the common
// case (no thread records) is one relaxed atomic load.
//
// A thread is known by a serial number of its own, never reused (a new thread can have the id of one
// that ended, and must not inherit its switch), and a thread that ends while recording leaves every
// context it recorded in (recording.cpp), so the switch neither passes on nor stays counted.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace braid {
struct OpRecorder;
}

namespace braid::autograd {

// The threads recording in one context. Shared with those threads, which leave it when they end,
// whether or not the context is still there.
struct RecordingThreads {
  std::atomic<int> count{0};
  std::mutex mu;
  std::vector<uint64_t> serials;  // threads recording now (a handful at most)

  bool has(uint64_t serial);
  bool leave(uint64_t serial);  // whether it was there
};

class Recording {
 public:
  // Autograd's entry points for the ops layer below it (tensor/recorder.h), installed by autograd before
  // anything can be recorded; null until then.
  void install(const OpRecorder* r) noexcept { recorder_.store(r, std::memory_order_release); }
  const OpRecorder* recorder() const noexcept { return recorder_.load(std::memory_order_acquire); }

  // Whether any thread records (a hint: the hot-path check before on()).
  bool any() const noexcept { return threads_->count.load(std::memory_order_relaxed) != 0; }
  // Whether the calling thread records.
  bool on() const;
  // Sets the calling thread's switch; returns the previous value.
  bool set(bool enable);

 private:
  std::atomic<const OpRecorder*> recorder_{nullptr};
  std::shared_ptr<RecordingThreads> threads_ = std::make_shared<RecordingThreads>();
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
