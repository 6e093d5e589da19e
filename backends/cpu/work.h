// One submission, copied out of the caller's braid_work, and how a queue thread runs it.
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "braid_backend.h"

struct braid_backend_device_t;

namespace braid::cpu {

// Self-contained: the descs a braid_work points to are only valid during queue_submit unless the host
// marks them persistent (the runtime does), so the kernel calls are either the host's (borrowed) or
// copies owned here. Kept small (about 400 bytes, the waits being most of it) because every item passes
// through a slot of the queue's ring, and moving one moves only the waits in use: a KERNELS item holds
// a pointer and a count, never the calls themselves.
struct WorkItem {
  braid_work_kind kind = BRAID_WORK_MARKER;
  uint32_t num_waits = 0;
  std::array<braid_backend_semaphore, BRAID_MAX_WAITS> waits;
  std::array<uint64_t, BRAID_MAX_WAITS> wait_values;
  braid_backend_semaphore signal = nullptr;
  uint64_t signal_value = 0;
  void* token = nullptr;
  uint32_t num_calls = 0;                            // KERNEL: 1; KERNELS: num_kernels
  const braid_kernel_call* calls = nullptr;          // KERNEL(S): the host's calls or owned_calls
  std::unique_ptr<braid_kernel_call[]> owned_calls;  // without BRAID_WORK_PERSISTENT_DESCS
  braid_copy_desc copy;                              // COPY

  WorkItem() = default;
  WorkItem(WorkItem&& o) noexcept { take(o); }
  WorkItem& operator=(WorkItem&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }

 private:
  void take(WorkItem& o) noexcept;
};

// Validates `work` cheaply and copies it into `out`. On failure returns BRAID_ERR_INVALID_ARGUMENT and
// sets *why to a static explanation.
braid_status make_work_item(const braid_work& work, WorkItem& out, const char** why) noexcept;

// Waits, asks the host, runs, reports and signals, in that order. `device` is the queue's device (its
// arena runs the kernel or a large copy). Never throws.
void run_work_item(const WorkItem& item, braid_backend_device_t& device) noexcept;

}  // namespace braid::cpu
