// CPU devices pinned to their cores (backends/cpu/README.md, "Devices"): each device's properties
// name its CPUs, devices cut from one machine get disjoint ones, and the device's queue thread runs
// only on them.
#include <dirent.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "support.h"

namespace {

// The "cpus" array of a device's properties JSON.
std::set<int> device_cpus(braid_context ctx, braid_device dev) {
  braid_device_info info{};
  info.struct_size = sizeof info;
  BRAID_CHECK_OK(braid_context_device_info(ctx, dev, &info));
  const std::string json = info.properties_json;
  const size_t at = json.find("\"cpus\": [");
  REQUIRE(at != std::string::npos);
  std::istringstream in(json.substr(at + 9, json.find(']', at) - at - 9));
  std::set<int> cpus;
  for (std::string item; std::getline(in, item, ',');) cpus.insert(std::stoi(item));
  return cpus;
}

// Parses a kernel CPU list ("0-2,5").
std::set<int> parse_list(const std::string& list) {
  std::set<int> cpus;
  std::istringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    const size_t dash = part.find('-');
    const int lo = std::stoi(part.substr(0, dash)),
              hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
  }
  return cpus;
}

// Cpus_allowed_list of this process's thread named `name`; empty if there is none.
std::set<int> thread_cpus(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  REQUIRE(dir != nullptr);
  std::set<int> found;
  while (dirent* e = readdir(dir)) {
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::getline(std::ifstream(task + "/comm"), comm);
    if (comm != name) continue;
    std::ifstream status(task + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Cpus_allowed_list:", 0) == 0) found = parse_list(line.substr(line.find_first_not_of(" \t", 18)));
  }
  closedir(dir);
  return found;
}

}  // namespace

// The CPUs this process may run on.
std::set<int> allowed_cpus() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return parse_list(line.substr(line.find_first_not_of(" \t", 18)));
  return {};
}

TEST_CASE("pinning: two CPU devices get their own CPUs and their compute queue threads stay on them") {
  const std::set<int> allowed = allowed_cpus();
  REQUIRE(!allowed.empty());
  test::Ctx c(2);
  const std::set<int> a = device_cpus(c.ctx, 0), b = device_cpus(c.ctx, 1);
  CHECK(!a.empty());
  CHECK(!b.empty());
  for (int cpu : a) CHECK(allowed.count(cpu) == 1);
  for (int cpu : b) CHECK(allowed.count(cpu) == 1);
  if (allowed.size() >= 2) {
    for (int cpu : a) CHECK(b.count(cpu) == 0);  // disjoint when there are CPUs enough
  } else {
    CHECK(a == allowed);  // one CPU (taskset, as under TSan): both devices share it
    CHECK(b == allowed);
  }
  // Work on cpu:1 so its compute queue's thread has run (it pins itself when it starts).
  test::T x = test::full(c.ctx, 1, BRAID_FLOAT64, {1000, 1000}, 1.0);
  test::T y;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 1.0, 0, y.out()));
  CHECK(test::to_vector(y).front() == 2.0);
  CHECK(thread_cpus("braid-cpu1-c0") == b);
  CHECK(thread_cpus("braid-cpu0-c0") == a);
}

TEST_CASE("pinning: one CPU device runs on every CPU of the process") {
  test::Ctx c(1);
  const std::set<int> allowed = allowed_cpus();
  CHECK(device_cpus(c.ctx, 0) == allowed);
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {10}, 1.0);
  CHECK(test::to_vector(x).front() == 1.0);
  CHECK(thread_cpus("braid-cpu0-c0") == allowed);
}
