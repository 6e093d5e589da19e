// Records ops, copies and waits with their queue and timestamps, and writes Chrome-trace JSON with
// one track per device queue and one per host thread that waited (open it in chrome://tracing or
// ui.perfetto.dev). Thread-safe.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "braid.h"

namespace braid {

struct Queue;

// An op or a host wait as the trace shows it. The engine fills one as each profiled op ends; `queue`
// only identifies the op's queue (the key of its track): the profiler, which the engine includes,
// never looks inside it, so it needs nothing of the engine's.
struct ProfileEvent {
  const char* name;    // a static string
  const Queue* queue;  // nullptr: a host event
  int32_t track;       // the queue's track (Queue::track); host: the thread's number (host_threads_)
  int64_t begin_ns, end_ns;
  braid_status status;
};

// One device as the trace shows it: a process named `name` with a track per queue. The caller (the
// context) describes its devices this way, so the profiler, a layer below the devices, never needs
// to know what a device is (docs/ARCHITECTURE.md, "Layers").
struct ProfileDevice {
  struct Track {
    const Queue* queue;  // the queue whose ops go on this track
    int32_t track;       // its tid (Queue::track)
    std::string name;    // "compute", "transfer", ...
  };
  std::string name;  // "cpu:0 (<the backend's device name>)"
  std::vector<Track> queues;
};

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
  // An op that ended: begin_ns is when it started on its queue, or when it was submitted where the
  // backend gives no start (the profiler moves it to the end of the op before it on the queue).
  void record_op(const ProfileEvent& op);
  // A host-side wait (wait_to_read, to_host, wait_all) on the calling thread's track: one track per
  // application thread, named after the thread (pthread_setname_np) or "host thread N".
  void record_wait(const char* what, int64_t begin_ns, int64_t end_ns);
  // Writes the events recorded so far, devices[i] being device i; throws braid::Error(BRAID_ERR_IO)
  // if the file cannot be written (nothing is left behind then). A regular file or a new path is
  // replaced atomically through a temporary; an existing symlink, FIFO or character device is written
  // through, never replaced; a directory, socket or block device is refused.
  void write(const std::string& path, std::span<const ProfileDevice> devices) const;

 private:
  std::string json(std::span<const ProfileDevice> devices) const;
  struct HostThread {
    int32_t number;  // 1, 2, ... in the order of their first event: the host track's tid
    std::string name;
  };
  std::chrono::steady_clock::time_point epoch_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mu_;
  std::vector<ProfileEvent> events_;
  std::unordered_map<const Queue*, int64_t> queue_ends_;  // the end of the last op recorded per queue
  // The threads that recorded host events, by a per-thread serial number that, unlike a thread id,
  // is never reused by a later thread.
  std::unordered_map<uint64_t, HostThread> host_threads_;
};

// `s` as a JSON string literal (quotes included): quotes, backslashes and control characters escaped,
// bytes that are not UTF-8 replaced by U+FFFD, so any name (a device's, a thread's) keeps the trace valid.
std::string json_string(std::string_view s);

}  // namespace braid
