// Backpressure's bound on one device's work in flight (docs/ENGINE.md "Backpressure"):
// pushing waits while the device has `ops` ops or `bytes` bytes of op outputs in flight.
#pragma once
#include <cstdint>

#include "braid.h"

namespace braid {

struct InflightBound {
  uint64_t ops = 1024;
  uint64_t bytes = uint64_t{1} << 30;
};

// The bound a device gets when the application sets none: 1024 ops, and 1 GiB of outputs on a device
// with memory of its own (a discrete GPU, or a kind braid does not know) but 128 MiB where the
// device's memory is the host's (CPU, integrated and virtual GPUs). There, outputs queued beyond what
// keeps the device busy only grow the working set: fresh pages to fault in and caches to miss
// (docs/BENCHMARKS.md has the figures).
constexpr InflightBound default_inflight_bound(braid_device_kind kind) noexcept {
  const bool own_memory = kind == BRAID_DEVICE_GPU_DISCRETE || kind == BRAID_DEVICE_OTHER;
  return {1024, own_memory ? uint64_t{1} << 30 : uint64_t{128} << 20};
}

}  // namespace braid
