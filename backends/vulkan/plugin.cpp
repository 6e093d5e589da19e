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
#include "guarded.h"
#include "host.h"
#include "instance.h"
#include "kernels.h"
#include "plugin_table.h"
#include "queue.h"
#include "timeline.h"

namespace braid::vk {
namespace {

using braid::plugin::guarded;

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
      host::log(BRAID_LOG_ERROR, "device_open", e.what());
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
    auto k = plugin::enum_value(kind);
    if (device == nullptr || (k != BRAID_QUEUE_COMPUTE && k != BRAID_QUEUE_TRANSFER)) return BRAID_ERR_INVALID_ARGUMENT;
    try {
      *out = std::make_unique<braid_backend_queue_t>(*device, kind).release();
    } catch (const std::runtime_error& e) {
      host::log(BRAID_LOG_ERROR, "queue_create", e.what());
      return BRAID_ERR_DEVICE;
    }
    return BRAID_OK;
  });
}

void queue_destroy(braid_backend_queue queue) {
  if (queue == nullptr) return;
  if (queue->on_own_thread()) {
    host::log(BRAID_LOG_ERROR, "queue_destroy called from the queue's own thread; queue leaked");
    return;
  }
  std::unique_ptr<braid_backend_queue_t> owned(queue);
}

// queue_submit, queue_flush, the semaphore_* entries, supports and supports_call are the shared ones
// (backends/common/entry_points.h and semaphore_api.h), instantiated in the function table below for
// this plugin's types (the semaphore's is in timeline.h).
using Semaphore = braid_backend_semaphore_t;

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

// The shared entries come from plugin_table.h; these are the plugin's own. No extensions (get_proc_address).
constexpr braid_backend_api kApi =
    plugin::backend_api<braid_backend_queue_t, Semaphore, kernel_supports, call_supports, queue_destroy>({
        .name = "vulkan",
        .device_count = device_count,
        .device_props = device_props,
        .device_open = device_open,
        .device_close = device_close,
        .buffer_alloc = buffer_alloc,
        .buffer_free = buffer_free,
        .buffer_host_pointer = buffer_host_pointer,
        .queue_create = queue_create,
        .shutdown = shutdown,
        .device_props_json = device_props_json,
    });

}  // namespace
}  // namespace braid::vk

BRAID_BACKEND_PLUGIN_QUERY(braid::vk::kApi)
