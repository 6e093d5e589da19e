// What the machine offers (cores, memory, caches, model name) and how BRAID_CPU_DEVICES splits it.
#pragma once
#include <cstdint>
#include <string>

namespace braid::cpu {

struct Machine {
  int cores = 1;              // CPUs this process may run on (affinity mask)
  uint64_t memory_bytes = 0;  // physical memory, capped by a cgroup limit
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // 0 = unknown
  std::string model_name;
};

// Probed once; the machine does not change under a running process (affinity changes are ignored).
const Machine& machine();

// BRAID_CPU_DEVICES, read at each call so a process can change it between contexts.
// Default 1; clamped to [1, kMaxDevices]; unparsable values give the default.
inline constexpr int kMaxDevices = 64;
int device_count_from_env();

// One device's share of the machine when it is split into `count` devices.
struct DeviceShare {
  int index = 0;
  int count = 1;
  int cores = 1;  // max(1, machine cores / count)
  uint64_t memory_bytes = 0;
};
DeviceShare device_share(int index, int count);

}  // namespace braid::cpu
