// A queue: one dedicated thread running submitted work in FIFO order.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "braid_backend.h"
#include "fifo.h"
#include "work.h"

struct braid_backend_device_t;

// The ABI's opaque handle type is this class. Compute and transfer queues are the same machinery; two
// of them on one device run side by side, so copies overlap kernels. submit is thread-safe.
struct braid_backend_queue_t {
  // `name` (at most 15 characters) labels the thread in debuggers and profilers.
  braid_backend_queue_t(braid_backend_device_t& device, braid_queue_kind kind, const char* name);
  // Runs all work already submitted, then joins the thread.
  ~braid_backend_queue_t();

  braid_backend_queue_t(const braid_backend_queue_t&) = delete;
  braid_backend_queue_t& operator=(const braid_backend_queue_t&) = delete;

  // Copies and enqueues; BRAID_ERR_INVALID_ARGUMENT (with *why) if the work is malformed,
  // BRAID_ERR_INVALID_STATE once destruction has begun.
  braid_status submit(const braid_work& work, const char** why);

  braid_backend_device_t& device() const { return device_; }
  braid_queue_kind kind() const { return kind_; }
  bool on_own_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void loop() noexcept;

  braid_backend_device_t& device_;
  const braid_queue_kind kind_;
  // Waits for work: spins briefly, then parks on cv_. Returns false once stopping and drained.
  bool wait_for_work(std::unique_lock<std::mutex>& lock) noexcept;

  std::mutex mu_;
  std::condition_variable cv_;
  braid::cpu::Fifo<braid::cpu::WorkItem> fifo_;
  bool stopping_ = false;
  // Mirrors fifo_.size() so the spinning thread can watch it without the lock.
  std::atomic<size_t> queued_{0};
  // Set (under mu_) while the thread sleeps on cv_: submit only pays for a wake-up then.
  std::atomic<bool> parked_{false};
  std::thread thread_;  // last: started once everything it touches exists
};

namespace braid::cpu {
using Queue = braid_backend_queue_t;
}
