// A device as the runtime sees it: one opened backend device with its queues, allocator and
// in-flight accounting.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "braid_backend.h"
#include "engine/node.h"
#include "memory/caching_allocator.h"
#include "memory/slot_pool.h"

namespace braid {

struct Backend;

struct Device {
  Backend* backend = nullptr;
  const braid_backend_api* api = nullptr;
  braid_backend_device handle = nullptr;
  int32_t index = 0;            // in the context
  int32_t backend_index = 0;    // in its backend
  std::string id;               // "cpu:0"
  braid_backend_device_props props{};
  std::string props_json = "{}";  // backend-specific properties (ABI 1.1 device_props_json)

  Queue compute;
  Queue transfer;
  SlotPool storage_pool;  // the host objects of this device's storages; outlives them (declared first)
  std::unique_ptr<CachingAllocator> allocator;

  // Backpressure (DESIGN §5): ops and output bytes in flight on this device.
  std::atomic<uint64_t> inflight_ops{0};
  std::atomic<uint64_t> inflight_bytes{0};
  std::atomic<uint32_t> backpressure_waiters{0};
  std::mutex backpressure_mu;
  std::condition_variable backpressure_cv;

  Queue& queue(braid_queue_kind kind) noexcept { return kind == BRAID_QUEUE_TRANSFER ? transfer : compute; }
};

}  // namespace braid
