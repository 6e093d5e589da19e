// What the engine knows of a device: the backend API it submits through, the device's queues, and
// its in-flight accounting for backpressure. The device layer (device/device.h) builds the rest of
// a device on top of this (allocator, storage reuse, capabilities); the engine needs none of that,
// which keeps it below the device layer (docs/ARCHITECTURE.md, "Layers").
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "engine/inflight_bound.h"
#include "engine/node.h"

namespace braid {

struct Backend;

struct EngineDevice {
  Backend* backend = nullptr;
  const braid_backend_api* api = nullptr;
  braid_backend_device handle = nullptr;
  int32_t index = 0;             // in the context
  std::string id;                // "cpu:0"
  InflightBound inflight_bound;  // backpressure; set at open, read-only after

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
  Queue& queue(braid_queue_kind kind) noexcept { return kind == BRAID_QUEUE_TRANSFER ? transfer : compute; }

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
};

}  // namespace braid
