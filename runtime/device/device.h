// A device as the runtime sees it: one opened backend device with its queues, allocator and
// in-flight accounting (the engine's part in engine/engine_device.h).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "core/dtype.h"
#include "core/spin_lock.h"
#include "engine/engine_device.h"
#include "engine/storage.h"
#include "memory/caching_allocator.h"
#include "memory/slot_pool.h"

namespace braid {

// A device is what the engine knows of it (engine/engine_device.h: backend, queues, in-flight
// accounting) plus what the layers above the engine need: its allocator, storage reuse, properties
// and capabilities.
struct Device : EngineDevice {
  int32_t backend_index = 0;  // in its backend
  braid_backend_device_props props{};
  std::string props_json = "{}";  // backend-specific properties (ABI 1.1 device_props_json)

  SlotPool storage_pool;  // the host objects of this device's storages; outlives them (declared first)
  std::unique_ptr<CachingAllocator> allocator;
  // Storages the application released while ops still use them: the next op output of the same size
  // may take one over instead of a fresh block (docs/ENGINE.md, "Reusing a released storage"). Weak,
  // so one nobody takes is freed when its ops end, as always. After storage_pool: destroyed first.
  static constexpr size_t kRecycleSlots = 4;
  SpinLock recycled_mu;
  std::array<std::weak_ptr<Storage>, kRecycleSlots> recycled;
  uint32_t next_recycled = 0;  // the slot the next offer overwrites (recycled_mu)

  // braid_device_measure's figures, measured once (runtime/hardware): the fields of braid_device_perf
  // after struct_size, in order.
  std::mutex measured_mu;
  bool measured = false;
  std::array<double, 6> measured_perf{};

  // api->supports(op, dtype), asked once per pair and remembered: every op checks it, and the call
  // into the plugin cost more than the rest of the check. The answer is a fact about the loaded
  // backend; racing first askers store the same value.
  bool supports(braid_kernel_op op, braid_dtype dtype) noexcept {
    dtype = kernel_dtype(dtype);  // a bool tensor's kernels are uint8 kernels
    const auto o = static_cast<size_t>(op), d = static_cast<size_t>(dtype);
    if (o >= BRAID_KOP_COUNT || d >= BRAID_DTYPE_COUNT) return api->supports(op, dtype) != 0;
    std::atomic<uint8_t>& known = supported_[o * BRAID_DTYPE_COUNT + d];
    uint8_t v = known.load(std::memory_order_relaxed);
    if (v == 0) {
      v = api->supports(op, dtype) != 0 ? 2 : 1;
      known.store(v, std::memory_order_relaxed);
    }
    return v == 2;
  }

  // The dtype a kernel call is typed by, as plugins read it: creation ops by their output, every other
  // op by its first input. BRAID_DTYPE_COUNT when the call has no such operand.
  static braid_dtype call_dtype(const braid_kernel_call& call) noexcept {
    switch (call.op) {
      case BRAID_KOP_FILL:
      case BRAID_KOP_ARANGE:
      case BRAID_KOP_RANDOM_UNIFORM:
      case BRAID_KOP_RANDOM_NORMAL: return call.num_outputs > 0 ? call.outputs[0].dtype : BRAID_DTYPE_COUNT;
      default: return call.num_inputs > 0 ? call.inputs[0].dtype : BRAID_DTYPE_COUNT;
    }
  }

  // Whether the backend runs this whole call (plugin ABI 1.4 supports_call), asked before every push.
  // supports(op, dtype) first, so the plugin only sees calls of pairs it has kernels for (as the ABI
  // promises). Not remembered: the answer may depend on anything in the call, and one call into the
  // plugin per op is cheap. A plugin without the entry (api is the host's resolved table, which
  // always covers it) answers by supports(op, dtype) alone; the dtype rules of the C API (which ops
  // take integers, BRAID_ERR_DTYPE) are checked by the ops before this.
  bool supports_call(const braid_kernel_call& call) noexcept {
    if (!supports(call.op, call_dtype(call))) return false;
    return api->supports_call == nullptr || api->supports_call(handle, &call) != 0;
  }

 private:
  std::array<std::atomic<uint8_t>, size_t{BRAID_KOP_COUNT} * BRAID_DTYPE_COUNT> supported_{};  // 0 unknown, 1 no, 2 yes
};

}  // namespace braid
