// An opened CPU device: a share of the machine's cores (a oneTBB arena) and the queues that feed it.
#pragma once
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <memory>
#include <mutex>
#include <vector>

#include "braid_backend.h"
#include "core_pinning.h"
#include "exec.h"
#include "topology.h"

struct braid_backend_queue_t;

// The ABI's opaque handle type is this class.
struct braid_backend_device_t {
  explicit braid_backend_device_t(const braid::cpu::DeviceShare& share);
  // Drains and joins any queue the host did not destroy, then releases the arena and TBB's workers.
  ~braid_backend_device_t();

  braid_backend_device_t(const braid_backend_device_t&) = delete;
  braid_backend_device_t& operator=(const braid_backend_device_t&) = delete;

  tbb::task_arena& arena() { return arena_; }
  braid::cpu::Exec& exec() { return exec_; }
  int cores() const { return share_.cores; }
  // Pins the calling thread to the device's CPUs (its compute queue threads call it first:
  // core_pinning.h).
  void pin_this_thread() { pinner_->pin_this_thread(); }

  // The device owns its queues; the host holds raw handles to them.
  braid_backend_queue_t* create_queue(braid_queue_kind kind);
  // Drains and joins the queue. false if it is not one of ours (already destroyed, or foreign).
  bool destroy_queue(braid_backend_queue_t* queue);
  // Whether the calling thread is one of this device's queue threads (which cannot join themselves).
  bool is_queue_thread() const;

 private:
  const braid::cpu::DeviceShare share_;
  // Holds TBB's worker pool so the destructor can wait for it to wind down (see device.cpp).
  tbb::task_scheduler_handle tbb_handle_;
  tbb::task_arena arena_;
  braid::cpu::ArenaExec exec_;
  std::unique_ptr<braid::cpu::CorePinner> pinner_;  // after arena_: observes it
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<braid_backend_queue_t>> queues_;
  int queues_created_ = 0;
};

namespace braid::cpu {
using Device = braid_backend_device_t;

// Properties of device `share.index` of `share.count`.
braid_backend_device_props device_props(const DeviceShare& share);
}  // namespace braid::cpu
