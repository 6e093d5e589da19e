// Entries of a plugin's braid_backend_api that every plugin writes the same way (the semaphore ones
// are in semaphore_api.h). Templates, instantiated in the plugin's function table once its own types
// are complete:
//
//   plugin::queue_submit<braid_backend_queue_t>, plugin::supports<kernel_supports>, ...
#pragma once
#include <cstdint>

#include "braid_backend.h"
#include "guarded.h"
#include "host_callbacks.h"
#include "kernel_call.h"

namespace braid::plugin {

// Queue needs submit(const braid_work&, const char** why), which checks the work
// (work_checks.h) and queues it. Thread-safe as the ABI requires.
template <typename Queue>
braid_status queue_submit(Queue* queue, const braid_work* work) {
  if (queue == nullptr || work == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  const char* why = "";
  braid_status s = guarded([&] { return queue->submit(*work, &why); });
  if (s != BRAID_OK) host::log(BRAID_LOG_DEBUG, "queue_submit", why);
  return s;
}

// For plugins whose devices own their queues: Queue needs on_own_thread() and device() with
// destroy_queue(Queue*) returning whether the queue was the device's. A queue thread cannot join
// itself, so destroying a queue from a host callback on its own thread is refused (and the queue
// leaked) rather than deadlocking.
template <typename Queue>
void queue_destroy(Queue* queue) {
  if (queue == nullptr) return;
  if (queue->on_own_thread()) {
    host::log(BRAID_LOG_ERROR, "queue_destroy called from the queue's own thread; queue leaked");
    return;
  }
  if (!queue->device().destroy_queue(queue)) host::log(BRAID_LOG_ERROR, "queue_destroy of an unknown queue");
}

// Every plugin starts work as it is submitted (or batches it until its device idles), so a flush
// has nothing to add. Optional since ABI 1.4 (the host's default is the same), but a host of 1.3 or
// older refuses a table without it, and these plugins still load there.
template <typename Queue>
braid_status queue_flush(Queue* queue) {
  return queue != nullptr ? BRAID_OK : BRAID_ERR_INVALID_ARGUMENT;
}

// supports(op, dtype): values outside the enums are "no" before the plugin's table sees them.
template <bool (*KernelSupports)(braid_kernel_op, braid_dtype)>
int32_t supports(braid_kernel_op op, braid_dtype dtype) {
  if (!valid_op(op) || !valid_dtype(dtype)) return 0;
  try {
    return KernelSupports(op, dtype) ? 1 : 0;
  } catch (...) {  // a plugin's table that allocates on first use
    return 0;
  }
}

// supports_call(device, call) (ABI 1.4): CallSupports sees the whole call. Asked before every push,
// so it must stay cheap; a NULL argument or an op outside the enum is "no".
template <bool (*CallSupports)(const braid_kernel_call&)>
int32_t supports_call(braid_backend_device device, const braid_kernel_call* call) {
  if (device == nullptr || call == nullptr || !valid_op(call->op)) return 0;
  try {
    return CallSupports(*call) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // namespace braid::plugin
