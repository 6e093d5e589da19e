// The plugin's one exported symbol and its function table: C entry points that check arguments, turn
// exceptions into status codes, and hand off to the device, queue and semaphore classes.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>

#include "fork_guard.h"
#include "braid_backend.h"
#include "buffers.h"
#include "device.h"
#include "enum_value.h"
#include "host.h"
#include "kernels/kernels.h"
#include "queue.h"
#include "guarded.h"
#include "semaphore_api.h"
#include "timeline_semaphore.h"
#include "topology.h"

namespace braid::cpu {
namespace {

using braid::plugin::guarded;


void log_debug(const char* what, const char* why) {
  try {
    host::log(BRAID_LOG_DEBUG, (std::string("cpu: ") + what + ": " + why).c_str());
  } catch (...) {
  }
}

// ---- devices ----

braid_status device_count(int32_t* out, const char** reason) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = device_count_from_env();  // never zero: the CPU is always there
    if (reason != nullptr) *reason = "";
    return BRAID_OK;
  });
}

braid_status device_props(int32_t index, braid_backend_device_props* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    int count = device_count_from_env();
    if (index < 0 || index >= count) return BRAID_ERR_NOT_FOUND;
    // Write only what the host's struct covers; major 1 starts at today's size, so less is a host bug.
    size_t n = std::min<size_t>(out->struct_size, sizeof(braid_backend_device_props));
    if (n < sizeof(braid_backend_device_props)) return BRAID_ERR_INVALID_ARGUMENT;
    braid_backend_device_props props = braid::cpu::device_props(device_share(index, count));
    std::memcpy(out, &props, n);
    out->struct_size = static_cast<uint32_t>(n);
    return BRAID_OK;
  });
}

braid_status device_open(int32_t index, braid_backend_device* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    int count = device_count_from_env();
    if (index < 0 || index >= count) return BRAID_ERR_NOT_FOUND;
    *out = std::make_unique<Device>(device_share(index, count)).release();
    return BRAID_OK;
  });
}

void device_close(braid_backend_device device) {
  if (device == nullptr) return;
  // Closing from a host callback on one of the device's own queue threads would join that thread from
  // itself: refuse (and leak) rather than deadlock or abort.
  if (device->is_queue_thread()) {
    host::log(BRAID_LOG_ERROR, "cpu: device_close called from one of the device's queue threads; device leaked");
    return;
  }
  std::unique_ptr<Device> owned(device);  // the destructor drains and joins; it does not throw
}

// ---- memory ----

braid_status buffer_alloc(braid_backend_device device, uint64_t bytes, braid_backend_buffer* out) {
  if (device == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return allocate_buffer(bytes, out);
}

void buffer_free(braid_backend_device, braid_backend_buffer buffer) { free_buffer(buffer); }

void* buffer_host_pointer(braid_backend_buffer buffer) { return buffer != nullptr ? buffer->data : nullptr; }

// ---- queues ----

braid_status queue_create(braid_backend_device device, braid_queue_kind kind, braid_backend_queue* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    auto k = enum_value(kind);
    if (device == nullptr || (k != BRAID_QUEUE_COMPUTE && k != BRAID_QUEUE_TRANSFER)) return BRAID_ERR_INVALID_ARGUMENT;
    *out = device->create_queue(kind);
    return BRAID_OK;
  });
}

void queue_destroy(braid_backend_queue queue) {
  if (queue == nullptr) return;
  // A queue cannot join itself: destroying it from a host callback on its own thread would deadlock,
  // so refuse (and leak) rather than abort.
  if (queue->on_own_thread()) {
    host::log(BRAID_LOG_ERROR, "cpu: queue_destroy called from the queue's own thread; queue leaked");
    return;
  }
  if (!queue->device().destroy_queue(queue)) host::log(BRAID_LOG_ERROR, "cpu: queue_destroy of an unknown queue");
}

braid_status queue_submit(braid_backend_queue queue, const braid_work* work) {
  if (queue == nullptr || work == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  const char* why = "";
  braid_status s = guarded([&] { return queue->submit(*work, &why); });
  if (s != BRAID_OK) log_debug("queue_submit", why);
  return s;
}

// Work starts as soon as it is submitted; there is nothing to flush.
braid_status queue_flush(braid_backend_queue queue) { return queue != nullptr ? BRAID_OK : BRAID_ERR_INVALID_ARGUMENT; }

// ---- semaphores ----

// The semaphore_* entries are the shared ones (backends/common/semaphore_api.h), instantiated in the
// function table below for this plugin's semaphore type.

// ---- kernels and lifetime ----

int32_t supports(braid_kernel_op op, braid_dtype dtype) {
  auto o = enum_value(op);
  auto t = enum_value(dtype);
  if (o < 0 || o >= BRAID_KOP_COUNT || t < 0 || t >= BRAID_DTYPE_COUNT) return 0;
  try {
    return kernel_supports(op, dtype) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void shutdown() {
  host::release();
}

constexpr braid_backend_api kApi = {
    sizeof(braid_backend_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, "cpu",
    device_count, device_props, device_open, device_close,
    buffer_alloc, buffer_free, buffer_host_pointer,
    queue_create, queue_destroy, queue_submit, queue_flush,
    plugin::semaphore_create<Semaphore>, plugin::semaphore_destroy<Semaphore>, plugin::semaphore_query<Semaphore>,
    plugin::semaphore_signal<Semaphore>, plugin::semaphore_wait<Semaphore>, plugin::semaphore_notify<Semaphore>,
    plugin::semaphore_fail<Semaphore>,
    supports, shutdown,
    nullptr,  // device_props_json: braid_device_info already says all there is about a CPU device
};

}  // namespace
}  // namespace braid::cpu

extern "C" BRAID_API braid_status braid_backend_query(uint32_t host_major, [[maybe_unused]] uint32_t host_minor,
                                                      const braid_host_api* host,
                                                      const braid_backend_api** out) {
  if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  // Only the major must match: either side may have the newer minor, as tables only grow at the end.
  if (host_major != BRAID_BACKEND_ABI_MAJOR) return BRAID_ERR_ABI_MISMATCH;
  braid::cpu::install_fork_guard();
  if (braid_status s = braid::cpu::host::acquire(host); s != BRAID_OK) return s;  // a second, different host
  *out = &braid::cpu::kApi;
  return BRAID_OK;
}
