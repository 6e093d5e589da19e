// A device as the runtime sees it: one opened backend device with its queues, allocator and
// in-flight accounting.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "core/spin_lock.h"
#include "engine/inflight_bound.h"
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
  InflightBound inflight_bound;   // backpressure; set at open, read-only after

  Queue compute;
  Queue transfer;
  // A second compute queue for collectives (runtime/parallel): their reductions run beside the
  // compute queue, so a gradient's allreduce starts as soon as backward has written it instead of
  // after every backward op pushed before it (the role NCCL's own stream plays on CUDA).
  Queue comm;
  // Compute queues beyond the first (braid_context_options.compute_queues): the engine spreads
  // independent ops over `compute` and these (Engine::push). Tracks 3, 4, ... in the profiler.
  std::vector<std::unique_ptr<Queue>> more_compute;
  uint32_t next_compute = 0;  // round-robin position (Engine::mu_)
  // Every queue of the device: compute, transfer, comm, then more_compute.
  std::vector<Queue*> queues() {
    std::vector<Queue*> all{&compute, &transfer, &comm};
    for (auto& q : more_compute) all.push_back(q.get());
    return all;
  }
  // The profiler's name of a track (Queue::track).
  static std::string queue_name(int32_t track) {
    if (track == 0) return "compute";
    if (track == 1) return "transfer";
    if (track == 2) return "comm";
    return "compute" + std::to_string(track - 2);
  }
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

  // Backpressure (docs/ENGINE.md): ops and output bytes in flight on this device, counted as what was
  // pushed minus what has ended. The two sides are written by different threads (pushers, the
  // backend's completion threads), so each gets its own cache line: one shared in-flight counter
  // moved a line between the cores twice per op. `ended_seen` is the pushers' last reading of
  // `ended`: since `ended` only grows, pushed - ended_seen is an upper bound of what is in flight,
  // and `ended` needs reloading only when that bound reaches the limit.
  struct Counts {
    std::atomic<uint64_t> ops{0};
    std::atomic<uint64_t> bytes{0};
  };
  struct alignas(64) PushSide {
    Counts pushed;
    Counts ended_seen;
  } push_side;
  alignas(64) Counts ended;
  alignas(64) std::atomic<uint32_t> backpressure_waiters{0};
  std::mutex backpressure_mu;
  std::condition_variable backpressure_cv;

  Queue& queue(braid_queue_kind kind) noexcept { return kind == BRAID_QUEUE_TRANSFER ? transfer : compute; }

  // api->supports(op, dtype), asked once per pair and remembered: every op checks it, and the call
  // into the plugin cost more than the rest of the check. The answer is a fact about the loaded
  // backend; racing first askers store the same value.
  bool supports(braid_kernel_op op, braid_dtype dtype) noexcept {
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
