// One submission, copied out of the caller's braid_work, and how a queue thread runs it.
#pragma once
#include <array>
#include <cstdint>

#include "braid_backend.h"

struct braid_backend_device_t;

namespace braid::cpu {

// Self-contained: the descs a braid_work points to are only valid during queue_submit, so the kernel
// call and copy desc are held by value. Copying one copies only what is in use (the header, the
// views the call has, the waits it has): a whole kernel call is ~1.7 KiB, a tiny op's used part
// ~350 bytes, and items are copied on submit and again when the queue thread takes them.
struct WorkItem {
  braid_work_kind kind = BRAID_WORK_MARKER;
  uint32_t num_waits = 0;
  std::array<braid_backend_semaphore, BRAID_MAX_WAITS> waits;
  std::array<uint64_t, BRAID_MAX_WAITS> wait_values;
  braid_backend_semaphore signal = nullptr;
  uint64_t signal_value = 0;
  void* token = nullptr;
  braid_kernel_call call;  // KERNEL: inputs/outputs beyond num_inputs/num_outputs are unset
  // KERNEL with BRAID_WORK_PERSISTENT_DESCS: the host's call, used in place of `call` (not copied).
  const braid_kernel_call* host_call = nullptr;
  braid_copy_desc copy;    // COPY

  WorkItem() = default;
  WorkItem(const WorkItem& o) noexcept { assign(o); }
  WorkItem& operator=(const WorkItem& o) noexcept {
    if (this != &o) assign(o);
    return *this;
  }

 private:
  void assign(const WorkItem& o) noexcept;
};

// Validates `work` cheaply and copies it into `out`. On failure returns BRAID_ERR_INVALID_ARGUMENT and
// sets *why to a static explanation.
braid_status make_work_item(const braid_work& work, WorkItem& out, const char** why) noexcept;

// Waits, asks the host, runs, reports and signals, in that order. `device` is the queue's device (its
// arena runs the kernel or a large copy). Never throws.
void run_work_item(const WorkItem& item, braid_backend_device_t& device) noexcept;

}  // namespace braid::cpu
