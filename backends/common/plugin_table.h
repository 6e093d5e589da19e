// One builder for every device plugin's function table (braid_backend_api) and its query entry point.
// A plugin passes what is its own (name, devices, buffers, queue creation, kernel tables, extras); the
// queue, semaphore and supports entries are the shared ones of entry_points.h and semaphore_api.h.
//
//   constexpr braid_backend_api kApi = plugin::backend_api<Queue, Semaphore, kernel_supports, call_supports>({
//       .name = "cpu", .device_count = device_count, ...});
//   ...
//   BRAID_BACKEND_PLUGIN_QUERY(braid::cpu::kApi)
#pragma once
#include "braid_backend.h"
#include "entry_points.h"
#include "host_callbacks.h"
#include "semaphore_api.h"

namespace braid::plugin {

// The entries that differ between plugins. Designated initialisers name each one, so an entry left
// out is visible where the plugin builds its table (and NULL in it).
struct OwnEntries {
  const char* name = nullptr;
  decltype(braid_backend_api::device_count) device_count = nullptr;
  decltype(braid_backend_api::device_props) device_props = nullptr;
  decltype(braid_backend_api::device_open) device_open = nullptr;
  decltype(braid_backend_api::device_close) device_close = nullptr;
  decltype(braid_backend_api::buffer_alloc) buffer_alloc = nullptr;
  decltype(braid_backend_api::buffer_free) buffer_free = nullptr;
  decltype(braid_backend_api::buffer_host_pointer) buffer_host_pointer = nullptr;
  decltype(braid_backend_api::queue_create) queue_create = nullptr;
  decltype(braid_backend_api::shutdown) shutdown = nullptr;
  decltype(braid_backend_api::device_props_json) device_props_json = nullptr;
  decltype(braid_backend_api::get_proc_address) get_proc_address = nullptr;      // NULL: no extensions
  decltype(braid_backend_api::buffer_import_host) buffer_import_host = nullptr;  // NULL: no foreign memory
};

// Every 1.0 entry is set, optional or not, so that hosts older than plugin ABI 1.4 (which require
// them all) load the plugin too. QueueDestroy defaults to the shared one for plugins whose devices
// own their queues (entry_points.h).
template <typename Queue, typename Semaphore, bool (*KernelSupports)(braid_kernel_op, braid_dtype),
          bool (*CallSupports)(const braid_kernel_call&), void (*QueueDestroy)(Queue*) = queue_destroy<Queue>>
constexpr braid_backend_api backend_api(const OwnEntries& own) {
  return braid_backend_api{
      .struct_size = sizeof(braid_backend_api),
      .abi_major = BRAID_BACKEND_ABI_MAJOR,
      .abi_minor = BRAID_BACKEND_ABI_MINOR,
      .name = own.name,
      .device_count = own.device_count,
      .device_props = own.device_props,
      .device_open = own.device_open,
      .device_close = own.device_close,
      .buffer_alloc = own.buffer_alloc,
      .buffer_free = own.buffer_free,
      .buffer_host_pointer = own.buffer_host_pointer,
      .queue_create = own.queue_create,
      .queue_destroy = QueueDestroy,
      .queue_submit = queue_submit<Queue>,
      .queue_flush = queue_flush<Queue>,
      .semaphore_create = semaphore_create<Semaphore>,
      .semaphore_destroy = semaphore_destroy<Semaphore>,
      .semaphore_query = semaphore_query<Semaphore>,
      .semaphore_signal = semaphore_signal<Semaphore>,
      .semaphore_wait = semaphore_wait<Semaphore>,
      .semaphore_notify = semaphore_notify<Semaphore>,
      .semaphore_fail = semaphore_fail<Semaphore>,
      .supports = supports<KernelSupports>,
      .shutdown = own.shutdown,
      .device_props_json = own.device_props_json,
      .supports_call = supports_call<CallSupports>,
      .get_proc_address = own.get_proc_address,
      .buffer_import_host = own.buffer_import_host,
  };
}

}  // namespace braid::plugin

// The plugin's one exported symbol: answers the host's query with `table` (host_callbacks.h).
#define BRAID_BACKEND_PLUGIN_QUERY(table)                                                                            \
  extern "C" BRAID_API braid_status braid_backend_query(uint32_t host_major, [[maybe_unused]] uint32_t,              \
                                                        const braid_host_api* host, const braid_backend_api** out) { \
    return braid::plugin::host::answer_query(host_major, host, &(table), out);                                       \
  }
