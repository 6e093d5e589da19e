#include "topology.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <thread>

namespace braid::cpu {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The affinity mask, not hardware_concurrency: under taskset or a container cpuset the process may use
// fewer CPUs than the machine has, and sizing thread pools beyond that only oversubscribes.
int probe_cores() {
  for (int ncpus = 1024; ncpus <= (1 << 16); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) break;
    size_t bytes = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(bytes, set);
    int rc = sched_getaffinity(0, bytes, set);
    int count = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    int err = errno;
    CPU_FREE(set);
    if (rc == 0 && count > 0) return count;
    if (rc != 0 && err != EINVAL) break;  // EINVAL: the kernel's mask is larger than ours
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

// Parses "32K", "8192K", "1M" or a plain number of bytes (sysfs cache sizes and cgroup limits).
uint64_t parse_size(const std::string& text) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

uint64_t probe_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
  // A container's memory limit is what we can really allocate ("max" = unlimited parses as 0).
  uint64_t limit = parse_size(read_line("/sys/fs/cgroup/memory.max"));
  if (limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;
  return bytes;
}

// sysconf knows the caches on glibc/x86; elsewhere it returns 0 or -1, so fall back to sysfs.
void probe_caches(Machine& m) {
  auto conf = [](int name) -> uint64_t {
    long v = sysconf(name);
    return v > 0 ? static_cast<uint64_t>(v) : 0;
  };
  m.l1d_bytes = conf(_SC_LEVEL1_DCACHE_SIZE);
  m.l2_bytes = conf(_SC_LEVEL2_CACHE_SIZE);
  m.l3_bytes = conf(_SC_LEVEL3_CACHE_SIZE);
  for (int i = 0; i < 16; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) break;
    std::string type = read_line(dir + "type");
    uint64_t size = parse_size(read_line(dir + "size"));
    if (level == "1" && type == "Data" && m.l1d_bytes == 0) m.l1d_bytes = size;
    if (level == "2" && m.l2_bytes == 0) m.l2_bytes = size;
    if (level == "3" && m.l3_bytes == 0) m.l3_bytes = size;
  }
}

std::string probe_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  // x86 says "model name"; some ARM kernels only say "Hardware" or "Processor".
  std::string fallback;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(std::string_view(line).substr(0, colon));
    std::string value = trim(std::string_view(line).substr(colon + 1));
    if (value.empty()) continue;
    if (key == "model name") return value;
    if (fallback.empty() && (key == "Hardware" || key == "Processor" || key == "cpu model")) fallback = value;
  }
  return fallback.empty() ? "CPU" : fallback;
}

Machine probe() {
  Machine m;
  m.cores = probe_cores();
  m.memory_bytes = probe_memory();
  probe_caches(m);
  m.model_name = probe_model_name();
  return m;
}

}  // namespace

const Machine& machine() {
  static const Machine m = probe();
  return m;
}

int device_count_from_env() {
  const char* text = std::getenv("BRAID_CPU_DEVICES");
  if (text == nullptr) return 1;
  std::string s = trim(text);
  if (s.empty()) return 1;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size()) return 1;  // garbage such as "two" or "2x"
  if (errno == ERANGE) v = v < 0 ? 1 : kMaxDevices;
  return static_cast<int>(std::clamp<long>(v, 1, kMaxDevices));
}

DeviceShare device_share(int index, int count) {
  const Machine& m = machine();
  DeviceShare share;
  share.index = index;
  share.count = count;
  share.cores = std::max(1, m.cores / count);
  share.memory_bytes = m.memory_bytes / static_cast<uint64_t>(count);
  return share;
}

}  // namespace braid::cpu
