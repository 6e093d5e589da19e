// What the machine offers (cores, memory, caches, model name) and how BRAID_CPU_DEVICES splits it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace braid::cpu {

struct Machine {
  int cores = 1;                                       // CPUs this process may run on (affinity mask)
  std::vector<int> cpus;                               // their ids, ascending (empty if the mask could not be read)
  uint64_t memory_bytes = 0;                           // physical memory, capped by a cgroup limit
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // 0 = unknown
  std::string model_name;
};

// Probed once; the machine does not change under a running process (affinity changes are ignored).
const Machine& machine();

// How BRAID_CPU_DEVICES splits the machine, read at each call so a process can change it between
// contexts. Two forms:
//   N          N devices (1..kMaxDevices), each with max(1, machine cores / N) cores (default: 1).
//   c0,c1,...  one device per entry, device i with ci cores (1..machine cores each; at most
//              kMaxDevices entries; "3," is one device of 3 cores). A sum above the machine's cores
//              is accepted: the devices then share cores (how tests make 8 devices on 2 cores).
// The plugin cannot fail the host's context, so a value it cannot take as written is corrected (an
// unparsable one gives the default) and the correction is in `warnings`, for the host's log.
inline constexpr int kMaxDevices = 64;
struct Split {
  std::vector<int> cores;             // one entry per device, each >= 1; never empty
  std::vector<std::string> warnings;  // what was corrected or is worth knowing, one line each
};
Split split_from_env();

// One device's share of the machine.
struct DeviceShare {
  int index = 0;
  int count = 1;
  int cores = 1;
  uint64_t memory_bytes = 0;  // machine memory / count
  // The CPUs its threads are pinned to (device.cpp): devices take consecutive CPUs of the affinity
  // mask in index order (device 0 the first `cores` of them), wrapping round when the devices ask for
  // more cores than there are, so devices share CPUs only when they must. Empty: not pinned.
  std::vector<int> cpus;
};
DeviceShare device_share(int index, const Split& split);

}  // namespace braid::cpu
