// The plugin's one exported symbol and its function table: C entry points that check arguments, turn
// exceptions into status codes, and hand off to the device, queue and semaphore classes. Nothing here
// touches CUDA before device_count: loading the plugin never needs a driver.
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "braid_backend.h"
#include "buffer.h"
#include "device.h"
#include "enum_value.h"
#include "guarded.h"
#include "host.h"
#include "kernels/kernels.h"
#include "plugin_table.h"
#include "probe.h"
#include "queue.h"
#include "timeline_semaphore.h"

namespace braid::cuda {
namespace {

// The shared translation, plus: a CUDA call that failed (cudaError_t, thrown as runtime_error by
// the plugin's wrappers) is the device's failure, logged. A thread that could not start
// (std::system_error) or host memory running out keep the shared status, but the reason is logged
// too: the status alone does not say what failed.
template <typename F>
braid_status guarded(F&& f) noexcept {
  return braid::plugin::guarded([&]() -> braid_status {
    try {
      return f();
    } catch (const std::system_error& e) {
      host::log(BRAID_LOG_ERROR, e.what());
      throw;  // the shared translation knows these
    } catch (const std::bad_alloc&) {
      host::log(BRAID_LOG_ERROR, "out of host memory");
      throw;
    } catch (const std::runtime_error& e) {
      host::log(BRAID_LOG_ERROR, e.what());
      return BRAID_ERR_DEVICE;
    }
  });
}

braid_status device_count(int32_t* out, const char** reason) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    const Probe& p = probe();
    *out = p.count;
    if (reason != nullptr) *reason = p.count > 0 ? "" : p.reason;
    return BRAID_OK;
  });
}

braid_status device_props(int32_t index, braid_backend_device_props* out) {
  return guarded([&] {
    if (out == nullptr || out->struct_size < sizeof(braid_backend_device_props)) return BRAID_ERR_INVALID_ARGUMENT;
    return fill_props(index, out);
  });
}

braid_status device_open(int32_t index, braid_backend_device* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    if (index < 0 || index >= probe().count) return BRAID_ERR_NOT_FOUND;
    *out = std::make_unique<Device>(index).release();
    return BRAID_OK;
  });
}

void device_close(braid_backend_device device) {
  if (device == nullptr) return;
  if (device->is_queue_thread()) {  // closing from a host callback on our own thread would self-join
    host::log(BRAID_LOG_ERROR, "device_close called from one of the device's queue threads; device leaked");
    return;
  }
  std::unique_ptr<Device> owned(device);  // drains and joins the queues, trims the pool
}

braid_status buffer_alloc(braid_backend_device device, uint64_t bytes, braid_backend_buffer* out) {
  if (device == nullptr || out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return guarded([&] { return device->alloc(bytes, out); });
}

void buffer_free(braid_backend_device device, braid_backend_buffer buffer) {
  if (device != nullptr) device->free(buffer);
}

void* buffer_host_pointer(braid_backend_buffer) { return nullptr; }  // device memory is not host-visible

braid_status queue_create(braid_backend_device device, braid_queue_kind kind, braid_backend_queue* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    auto k = plugin::enum_value(kind);
    if (device == nullptr || (k != BRAID_QUEUE_COMPUTE && k != BRAID_QUEUE_TRANSFER)) return BRAID_ERR_INVALID_ARGUMENT;
    *out = device->create_queue(kind);
    return BRAID_OK;
  });
}

// queue_destroy, queue_submit, queue_flush, the semaphore_* entries, supports and supports_call are
// the shared ones
// (backends/common/entry_points.h and semaphore_api.h), instantiated in the function table below for
// this plugin's types.

void shutdown() { host::release(); }

const char* device_props_json(int32_t index) {
  try {
    return props_json(index);
  } catch (...) {
    return nullptr;
  }
}

// The extension "braid_ext_cuda_buffer_device_pointer", void* (*)(braid_backend_buffer): the buffer's
// device pointer (unified addressing: it also names the device). For libraries that take CUDA memory
// themselves: libbraid hands it to the NCCL communication plugin (docs/CUDA.md, "Extensions").
void* buffer_device_pointer(braid_backend_buffer buffer) { return buffer != nullptr ? buffer->ptr : nullptr; }

void* get_proc_address(const char* name) {
  if (name != nullptr && std::strcmp(name, "braid_ext_cuda_buffer_device_pointer") == 0)
    return reinterpret_cast<void*>(&buffer_device_pointer);
  return nullptr;
}

// The shared entries come from plugin_table.h; these are the plugin's own.
constexpr braid_backend_api kApi = plugin::backend_api<Queue, Semaphore, kernel_supports, call_supports>({
    .name = "cuda",
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
    .get_proc_address = get_proc_address,
});

}  // namespace
}  // namespace braid::cuda

BRAID_BACKEND_PLUGIN_QUERY(braid::cuda::kApi)
