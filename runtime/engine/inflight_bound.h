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
// with memory of its own (a discrete GPU, or a kind braid does not know). Where the device's memory is
// the host's (CPU, integrated and virtual GPUs), outputs queued beyond what keeps the device busy only
// grow the working set: cold blocks that miss the caches. There the bound is a quarter of the device's
// last-level cache (between 4 and 128 MiB; 128 MiB when the device does not report one): the chapter's
// loop y = x + 1 on 16 MB tensors ran at 0.53x the speed of the synchronous loop with 128 MiB in
// flight, cycling eight output blocks through a 32 MiB L3, and at 1.0x with one output in flight
// (docs/BENCHMARKS.md). Running further ahead hides nothing here: one queued op outlasts a push.
constexpr InflightBound default_inflight_bound(braid_device_kind kind, uint64_t last_level_cache_bytes) noexcept {
  const bool own_memory = kind == BRAID_DEVICE_GPU_DISCRETE || kind == BRAID_DEVICE_OTHER;
  if (own_memory) return {1024, uint64_t{1} << 30};
  constexpr uint64_t kMin = uint64_t{4} << 20, kMax = uint64_t{128} << 20;
  if (last_level_cache_bytes == 0) return {1024, kMax};
  const uint64_t quarter = last_level_cache_bytes / 4;
  return {1024, quarter < kMin ? kMin : quarter > kMax ? kMax : quarter};
}

}  // namespace braid
