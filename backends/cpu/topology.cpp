#include "topology.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

namespace braid::cpu {
namespace {

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return std::move(out).str();
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The affinity mask, not hardware_concurrency: under taskset or a container cpuset the process may use
// fewer CPUs than the machine has, and sizing thread pools beyond that only oversubscribes. Returns the
// CPU ids in the mask, ascending; empty if it cannot be read.
std::vector<int> probe_cpus() {
  for (int ncpus = 1024; ncpus <= (1 << 16); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) break;
    size_t bytes = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(bytes, set);
    int rc = sched_getaffinity(0, bytes, set);
    int err = errno;
    std::vector<int> cpus;
    if (rc == 0)
      for (int c = 0; c < ncpus; ++c)
        if (CPU_ISSET_S(c, bytes, set)) cpus.push_back(c);
    CPU_FREE(set);
    if (rc == 0 && !cpus.empty()) return cpus;
    if (rc != 0 && err != EINVAL) break;  // EINVAL: the kernel's mask is larger than ours
  }
  return {};
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

// The kernel's view first (sysfs, what lscpu prints): the caches of the CPUs this machine has. glibc's
// sysconf decodes cpuid itself, and under a hypervisor that reports the host's caches (on an AMD EPYC VM
// here: an L3 of 384 MiB, where sysfs and lscpu say 32 MiB). sysconf only fills what sysfs lacks.
void probe_caches(Machine& m) {
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
  auto conf = [](int name) -> uint64_t {
    long v = sysconf(name);
    return v > 0 ? static_cast<uint64_t>(v) : 0;
  };
  if (m.l1d_bytes == 0) m.l1d_bytes = conf(_SC_LEVEL1_DCACHE_SIZE);
  if (m.l2_bytes == 0) m.l2_bytes = conf(_SC_LEVEL2_CACHE_SIZE);
  if (m.l3_bytes == 0) m.l3_bytes = conf(_SC_LEVEL3_CACHE_SIZE);
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
  m.cpus = probe_cpus();
  const unsigned hc = std::thread::hardware_concurrency();
  m.cores = !m.cpus.empty() ? static_cast<int>(m.cpus.size()) : hc > 0 ? static_cast<int>(hc) : 1;
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

namespace {

// A whole decimal number with nothing around it; nullopt for "", "2x", "-", "1e3" or one past int64.
std::optional<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;  // "+2" is 2, as strtol read it
  auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last || first == last) return std::nullopt;
  return v;
}

Split one_device(int cores) { return Split{{cores}, {}}; }

// "N": N devices sharing the machine's cores evenly (at least one core each).
Split split_count(const std::string& text, int cores) {
  const std::optional<int64_t> n = parse_int(text);
  Split s;
  int64_t count = 1;
  if (!n) {
    // strtol saturates: a number too long for int64 is still a number, only too large.
    const bool digits = text.find_first_not_of("+0123456789") == std::string::npos;
    count = digits ? kMaxDevices : 1;
    s.warnings.push_back(digits ? cat("BRAID_CPU_DEVICES=", text, " exceeds the maximum of ", kMaxDevices,
                                      " devices; using ", kMaxDevices)
                                : cat("BRAID_CPU_DEVICES='", text,
                                      "' is neither a device count nor a comma-separated list of core counts; "
                                      "using 1 device"));
  } else if (*n < 1) {
    s.warnings.push_back(cat("BRAID_CPU_DEVICES=", text, " is below 1; using 1 device"));
  } else if (*n > kMaxDevices) {
    count = kMaxDevices;
    s.warnings.push_back(
        cat("BRAID_CPU_DEVICES=", text, " exceeds the maximum of ", kMaxDevices, " devices; using ", kMaxDevices));
  } else {
    count = *n;
  }
  if (count > cores)
    s.warnings.push_back(cat(count, " CPU devices on ", cores, " cores: each has 1 core and the devices share cores"));
  s.cores.assign(static_cast<size_t>(count), std::max(1, cores / static_cast<int>(count)));
  return s;
}

// "c0,c1,...": device i gets ci cores.
Split split_list(const std::string& text, int cores) {
  std::vector<std::string_view> entries;
  std::string_view rest = text;
  for (size_t comma; (comma = rest.find(',')) != std::string_view::npos; rest.remove_prefix(comma + 1))
    entries.push_back(rest.substr(0, comma));
  entries.push_back(rest);
  if (entries.size() > 1 && trim(entries.back()).empty()) entries.pop_back();  // "3," is one device
  Split s;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string entry = trim(entries[i]);
    const std::optional<int64_t> c = parse_int(entry);
    if (!c || *c < 1) {
      Split fallback = one_device(cores);
      fallback.warnings.push_back(cat("BRAID_CPU_DEVICES='", text, "': entry ", i, " ('", entry,
                                      "') is not a positive core count; using 1 device with all ", cores, " cores"));
      return fallback;
    }
    if (s.cores.size() == static_cast<size_t>(kMaxDevices)) {
      s.warnings.push_back(cat("BRAID_CPU_DEVICES='", text, "' lists ", entries.size(), " devices; using the first ",
                               kMaxDevices, " (the maximum)"));
      break;
    }
    int n = static_cast<int>(std::min<int64_t>(*c, cores));
    if (*c > cores)
      s.warnings.push_back(cat("BRAID_CPU_DEVICES='", text, "': device ", i, " asks for ", entry,
                               " cores; the process has ", cores, ", so it gets ", cores));
    s.cores.push_back(n);
  }
  int64_t sum = 0;
  for (int c : s.cores) sum += c;
  if (sum > cores)
    s.warnings.push_back(cat("BRAID_CPU_DEVICES='", text, "' gives the devices ", sum, " cores in all on ", cores,
                             ": the devices share cores"));
  return s;
}

}  // namespace

Split split_from_env() {
  const int cores = machine().cores;
  const char* text = std::getenv("BRAID_CPU_DEVICES");
  const std::string s = text ? trim(text) : std::string();
  if (s.empty()) return one_device(cores);
  return s.find(',') == std::string::npos ? split_count(s, cores) : split_list(s, cores);
}

DeviceShare device_share(int index, const Split& split) {
  const Machine& m = machine();
  DeviceShare share;
  share.index = index;
  share.count = static_cast<int>(split.cores.size());
  share.cores = split.cores.at(static_cast<size_t>(index));
  share.memory_bytes = m.memory_bytes / static_cast<uint64_t>(share.count);
  if (!m.cpus.empty()) {
    size_t first = 0;
    for (int i = 0; i < index; ++i) first += static_cast<size_t>(split.cores[static_cast<size_t>(i)]);
    for (int k = 0; k < share.cores && k < static_cast<int>(m.cpus.size()); ++k)
      share.cpus.push_back(m.cpus[(first + static_cast<size_t>(k)) % m.cpus.size()]);
    std::sort(share.cpus.begin(), share.cpus.end());
  }
  return share;
}

}  // namespace braid::cpu
