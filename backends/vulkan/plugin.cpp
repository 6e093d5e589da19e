// The plugin's one exported symbol and its function table: C entry points that check arguments, turn
// exceptions into status codes, and hand off to the instance, device, queue and semaphore classes.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "braid_backend.h"
#include "device.h"
#include "enum_value.h"
#include "host.h"
#include "instance.h"
#include "kernels.h"
#include "queue.h"
#include "guarded.h"
#include "semaphore_api.h"
#include "timeline.h"

namespace braid::vk {
namespace {

using braid::plugin::guarded;


void log_line(braid_log_level level, const std::string& s) {
  try {
    host::log(level, ("vulkan: " + s).c_str());
  } catch (...) {
  }
}

braid_status device_count(int32_t* out, const char** reason) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    Instance& in = instance();
    *out = static_cast<int32_t>(in.devices.size());
    if (reason != nullptr) *reason = in.devices.empty() ? in.reason.c_str() : "";
    return BRAID_OK;
  });
}

braid_status device_props(int32_t index, braid_backend_device_props* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    Instance& in = instance();
    if (index < 0 || index >= static_cast<int32_t>(in.devices.size())) return BRAID_ERR_NOT_FOUND;
    size_t n = std::min<size_t>(out->struct_size, sizeof(braid_backend_device_props));
    if (n < sizeof(braid_backend_device_props)) return BRAID_ERR_INVALID_ARGUMENT;
    std::memcpy(out, &in.devices[static_cast<size_t>(index)].braid_props, n);
    out->struct_size = static_cast<uint32_t>(n);
    return BRAID_OK;
  });
}

braid_status device_open(int32_t index, braid_backend_device* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    Instance& in = instance();
    if (index < 0 || index >= static_cast<int32_t>(in.devices.size())) return BRAID_ERR_NOT_FOUND;
    try {
      *out = std::make_unique<braid_backend_device_t>(in.devices[static_cast<size_t>(index)]).release();
    } catch (const std::runtime_error& e) {
      log_line(BRAID_LOG_ERROR, std::string("device_open: ") + e.what());
      return BRAID_ERR_DEVICE;
    }
    return BRAID_OK;
  });
}

void device_close(braid_backend_device device) {
  std::unique_ptr<braid_backend_device_t> owned(device);  // waits for the device to go idle
}

braid_status buffer_alloc(braid_backend_device device, uint64_t bytes, braid_backend_buffer* out) {
  if (device == nullptr || out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return guarded([&] { return device->device_memory().allocate(bytes, out); });
}

void buffer_free(braid_backend_device device, braid_backend_buffer buffer) {
  if (device == nullptr || buffer == nullptr) return;
  device->device_memory().free(buffer);
}

// Device memory is never handed to the host as plain memory (even where, as on lavapipe, it could be):
// the runtime then moves data with copies, the way it must for a discrete GPU.
void* buffer_host_pointer(braid_backend_buffer) { return nullptr; }

braid_status queue_create(braid_backend_device device, braid_queue_kind kind, braid_backend_queue* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    auto k = enum_value(kind);
    if (device == nullptr || (k != BRAID_QUEUE_COMPUTE && k != BRAID_QUEUE_TRANSFER)) return BRAID_ERR_INVALID_ARGUMENT;
    try {
      *out = std::make_unique<braid_backend_queue_t>(*device, kind).release();
    } catch (const std::runtime_error& e) {
      log_line(BRAID_LOG_ERROR, std::string("queue_create: ") + e.what());
      return BRAID_ERR_DEVICE;
    }
    return BRAID_OK;
  });
}

void queue_destroy(braid_backend_queue queue) {
  if (queue == nullptr) return;
  if (queue->on_own_thread()) {
    log_line(BRAID_LOG_ERROR, "queue_destroy called from the queue's own thread; queue leaked");
    return;
  }
  std::unique_ptr<braid_backend_queue_t> owned(queue);
}

braid_status queue_submit(braid_backend_queue queue, const braid_work* work) {
  if (queue == nullptr || work == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  const char* why = "";
  braid_status s = guarded([&] { return queue->submit(*work, &why); });
  if (s != BRAID_OK) log_line(BRAID_LOG_DEBUG, std::string("queue_submit: ") + why);
  return s;
}

// Batches are submitted whenever the device goes idle (see queue.h), so a flush has nothing to add.
braid_status queue_flush(braid_backend_queue queue) { return queue != nullptr ? BRAID_OK : BRAID_ERR_INVALID_ARGUMENT; }

// The semaphore_* entries are the shared ones (backends/common/semaphore_api.h), instantiated in the
// function table below for this plugin's semaphore type (timeline.h).
using Semaphore = braid_backend_semaphore_t;

int32_t supports(braid_kernel_op op, braid_dtype dtype) {
  auto o = enum_value(op);
  auto t = enum_value(dtype);
  if (o < 0 || o >= BRAID_KOP_COUNT || t < 0 || t >= BRAID_DTYPE_COUNT) return 0;
  return kernel_supports(op, dtype) ? 1 : 0;
}

void shutdown() {
  host::release(release_instance);  // the last shutdown also releases it
}

const char* device_props_json(int32_t index) {
  try {
    Instance& in = instance();
    if (index < 0 || index >= static_cast<int32_t>(in.devices.size())) return nullptr;
    return in.devices[static_cast<size_t>(index)].json.c_str();
  } catch (...) {
    return nullptr;
  }
}

constexpr braid_backend_api kApi = {
    sizeof(braid_backend_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, "vulkan",
    device_count, device_props, device_open, device_close,
    buffer_alloc, buffer_free, buffer_host_pointer,
    queue_create, queue_destroy, queue_submit, queue_flush,
    plugin::semaphore_create<Semaphore>, plugin::semaphore_destroy<Semaphore>, plugin::semaphore_query<Semaphore>,
    plugin::semaphore_signal<Semaphore>, plugin::semaphore_wait<Semaphore>, plugin::semaphore_notify<Semaphore>,
    plugin::semaphore_fail<Semaphore>,
    supports, shutdown,
    device_props_json,
};

}  // namespace
}  // namespace braid::vk

extern "C" BRAID_API braid_status braid_backend_query(uint32_t host_major, [[maybe_unused]] uint32_t host_minor,
                                                      const braid_host_api* host, const braid_backend_api** out) {
  if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  if (host_major != BRAID_BACKEND_ABI_MAJOR) return BRAID_ERR_ABI_MISMATCH;
  if (braid_status s = braid::vk::host::acquire(host); s != BRAID_OK) return s;  // a second, different host
  *out = &braid::vk::kApi;
  return BRAID_OK;
}
