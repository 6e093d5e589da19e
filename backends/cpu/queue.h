// A queue: one dedicated thread running submitted work in FIFO order, fed through a lock-free ring.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "braid_backend.h"
#include "fifo.h"
#include "submit_ring.h"
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
  // Takes the next item in submission order, spinning briefly and then parking when there is none.
  // Returns false once stopping and drained.
  bool next(braid::cpu::WorkItem& item) noexcept;
  bool has_work() const noexcept { return ring_.ready() || spilling_.load() || !batch_.empty(); }

  braid_backend_device_t& device_;
  const braid_queue_kind kind_;

  // Submissions go into ring_; when it is full they go, in order, to overflow_ (under mu_), and every
  // later submission follows them there until the queue thread has taken the overflow (spilling_),
  // so FIFO order holds across the two. 256 slots of ~400 bytes stay in L2 while they cycle.
  braid::cpu::SubmitRing<braid::cpu::WorkItem, 256> ring_;
  std::mutex mu_;  // guards overflow_, stopping_'s writes and parking
  std::condition_variable cv_;
  braid::cpu::Fifo<braid::cpu::WorkItem> overflow_;
  std::atomic<bool> spilling_{false};
  std::atomic<bool> stopping_{false};
  // Set (under mu_) while the thread sleeps on cv_: submit only pays for a wake-up then.
  std::atomic<bool> parked_{false};
  braid::cpu::Fifo<braid::cpu::WorkItem> batch_;  // queue thread only: overflow taken, not yet run
  std::thread thread_;                            // last: started once everything it touches exists
};

namespace braid::cpu {
using Queue = braid_backend_queue_t;
}
