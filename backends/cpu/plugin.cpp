// The plugin's one exported symbol and its function table: C entry points that check arguments, turn
// exceptions into status codes, and hand off to the device, queue and semaphore classes.
#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>

#include "blas_library.h"
#include "braid_backend.h"
#include "buffers.h"
#include "cpu_features.h"
#include "device.h"
#include "enum_value.h"
#include "guarded.h"
#include "host.h"
#include "kernels/gemm_onednn.h"
#include "kernels/kernels.h"
#include "plugin_table.h"
#include "queue.h"
#include "timeline_semaphore.h"
#include "topology.h"

namespace braid::cpu {
namespace {

using braid::plugin::guarded;

// ---- devices ----

braid_status device_count(int32_t* out, const char** reason) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    const Split split = split_from_env();
    // The host enumerates once per context, starting here: the place to say what was corrected
    // (the plugin cannot fail the context over a bad BRAID_CPU_DEVICES).
    for (const std::string& w : split.warnings) host::log(BRAID_LOG_WARNING, w);
    // The gemm library is opened here, at the first enumeration: before any kernel thread runs (it
    // sets OPENBLAS_CORETYPE for the library's constructor), and so a missing one is said at once.
    if (const BlasLibrary& b = blas(); !b.ok()) {
      *out = 0;
      if (reason != nullptr) *reason = b.error.c_str();
      return BRAID_OK;
    }
    static std::once_flag onednn_prepared;
    std::call_once(onednn_prepared, kern::onednn::prepare);
    *out = static_cast<int32_t>(split.cores.size());  // the CPU is always there
    if (reason != nullptr) *reason = "";
    return BRAID_OK;
  });
}

braid_status device_props(int32_t index, braid_backend_device_props* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    const Split split = split_from_env();
    if (index < 0 || static_cast<size_t>(index) >= split.cores.size()) return BRAID_ERR_NOT_FOUND;
    // Write only what the host's struct covers; major 1 starts at today's size, so less is a host bug.
    size_t n = std::min<size_t>(out->struct_size, sizeof(braid_backend_device_props));
    if (n < sizeof(braid_backend_device_props)) return BRAID_ERR_INVALID_ARGUMENT;
    braid_backend_device_props props = braid::cpu::device_props(device_share(index, split));
    std::memcpy(out, &props, n);
    out->struct_size = static_cast<uint32_t>(n);
    return BRAID_OK;
  });
}

braid_status device_open(int32_t index, braid_backend_device* out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    const Split split = split_from_env();
    if (index < 0 || static_cast<size_t>(index) >= split.cores.size()) return BRAID_ERR_NOT_FOUND;
    *out = std::make_unique<Device>(device_share(index, split)).release();
    return BRAID_OK;
  });
}

void device_close(braid_backend_device device) {
  if (device == nullptr) return;
  // Closing from a host callback on one of the device's own queue threads would join that thread from
  // itself: refuse (and leak) rather than deadlock or abort.
  if (device->is_queue_thread()) {
    host::log(BRAID_LOG_ERROR, "device_close called from one of the device's queue threads; device leaked");
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

braid_status buffer_import_host(braid_backend_device device, void* data, uint64_t bytes, braid_backend_buffer* out) {
  if (device == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return import_buffer(data, bytes, out);
}

void* buffer_host_pointer(braid_backend_buffer buffer) { return buffer != nullptr ? buffer->data : nullptr; }

// ---- queues ----

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

// What braid_device_info cannot say about a CPU device: the vector ISA the kernels use, the gemm
// library's kernels (blas_library.h), which library runs float32 gemms (kernels/gemm_onednn.h), and the CPUs the
// device's threads are pinned to (core_pinning.h). The string lives until the next call for the same index (the host
// copies it at once).
const char* device_props_json(int32_t index) {
  static const std::string common = [] {
    const BlasLibrary& b = blas();
    return std::string("{\"vector_isa\": \"") + vector_isa(cpu_features()) + "\", \"blas\": \"openblas\", " +
           "\"blas_core\": \"" + b.core + "\", \"blas_coretype_requested\": \"" + b.requested + "\", " +
           "\"sgemm\": \"" + (kern::onednn::sgemm_in_use() ? "onednn" : "openblas") + "\"";
  }();
  static std::mutex mu;
  static std::array<std::string, kMaxDevices> json;
  const Split split = split_from_env();
  if (index < 0 || static_cast<size_t>(index) >= split.cores.size()) return nullptr;
  const DeviceShare share = device_share(index, split);
  std::string cpus;
  for (int c : share.cpus) cpus += (cpus.empty() ? "" : ", ") + std::to_string(c);
  const std::lock_guard lock(mu);
  std::string& out = json[static_cast<size_t>(index)];
  out = common + ", \"cpus\": [" + cpus + "]}";
  return out.c_str();
}

// ---- lifetime ----

void shutdown() { host::release(); }

// The shared entries come from plugin_table.h; these are the plugin's own. No extensions (get_proc_address).
constexpr braid_backend_api kApi = plugin::backend_api<Queue, Semaphore, kernel_supports, call_supports>({
    .name = "cpu",
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
    .buffer_import_host = buffer_import_host,
});

}  // namespace
}  // namespace braid::cpu

// The fork guard is installed when OpenBLAS is opened (blas_library.cpp), after OpenBLAS's own handlers.
BRAID_BACKEND_PLUGIN_QUERY(braid::cpu::kApi)
