// Records ops, copies and waits with their queue and timestamps, and writes Chrome-trace JSON with
// one track per device queue (open it in chrome://tracing or ui.perfetto.dev). Thread-safe.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "braid.h"

namespace braid {

struct OpNode;
struct Device;

class Profiler {
 public:
  Profiler() : epoch_(std::chrono::steady_clock::now()) {}
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  void start();
  void stop() noexcept { enabled_.store(false); }
  // Nanoseconds since the profiler (its context) was created.
  int64_t now() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count();
  }
  void record_op(const OpNode& node);
  // A host-side wait (wait_to_read, to_host, wait_all) on the calling thread's track.
  void record_wait(const char* what, int64_t begin_ns, int64_t end_ns);
  // Writes the events recorded so far; throws braid::Error(BRAID_ERR_IO) if the file cannot be written
  // (nothing is left behind then). A regular file or a new path is replaced atomically through a
  // temporary; an existing symlink, FIFO or character device is written through, never replaced; a
  // directory, socket or block device is refused.
  void write(const std::string& path, std::span<Device* const> devices) const;

 private:
  std::string json(std::span<Device* const> devices) const;
  struct Event {
    const char* name;
    int32_t device;  // -1: host
    int32_t queue;   // Queue::track (Device::queue_name); host: thread number
    int64_t begin_ns, end_ns;
    braid_status status;
  };
  std::chrono::steady_clock::time_point epoch_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace braid
