// BRAID_CPU_DEVICES through the CPU plugin's own ABI: a device count N, a comma-separated list of
// core counts, and the corrections (logged through the host's log, since the plugin cannot fail the
// host's context) for values it cannot take as written.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include "braid_backend.h"

#include "plugin_loader.h"

namespace {

std::mutex g_log_mu;
std::vector<std::string> g_lines;  // guarded by g_log_mu

void enum_log(braid_log_level level, const char* message) {
  std::lock_guard lock(g_log_mu);
  g_lines.emplace_back(std::string(level == BRAID_LOG_WARNING ? "warning: " : "other: ") + message);
}
int32_t enum_begin(void*) { return 1; }
void enum_end(void*, braid_status, const char*) {}
const braid_host_api kEnumHost = {
    sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, enum_log, enum_begin, enum_end};

// What the plugin makes of one value: the cores of each device and the log lines of the enumeration.
struct Seen {
  std::vector<int> cores;
  std::vector<std::string> log;
  bool logged(const std::string& part) const {
    return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
  }
};

Seen enumerate(const char* value) {
  const char* old = std::getenv("BRAID_CPU_DEVICES");
  const std::string saved = old ? old : "";
  if (value)
    setenv("BRAID_CPU_DEVICES", value, 1);
  else
    unsetenv("BRAID_CPU_DEVICES");
  {
    std::lock_guard lock(g_log_mu);
    g_lines.clear();
  }
  Seen seen;
  {
    test::PluginLib plugin(BRAID_CPU_PLUGIN, &kEnumHost);
    REQUIRE_MESSAGE(plugin.api() != nullptr, "cannot open the plugin: ", plugin.error());
    const braid_backend_api* api = plugin.api();
    int32_t n = 0;
    const char* reason = nullptr;
    REQUIRE(api->device_count(&n, &reason) == BRAID_OK);
    for (int32_t i = 0; i < n; ++i) {
      braid_backend_device_props p{};
      p.struct_size = sizeof p;
      REQUIRE(api->device_props(i, &p) == BRAID_OK);
      seen.cores.push_back(static_cast<int>(p.compute_units));
    }
    braid_backend_device_props p{};
    p.struct_size = sizeof p;
    CHECK(api->device_props(n, &p) == BRAID_ERR_NOT_FOUND);
    // The last device opens with its share (an arena of that many threads).
    braid_backend_device d = nullptr;
    REQUIRE(api->device_open(n - 1, &d) == BRAID_OK);
    api->device_close(d);
  }
  if (old)
    setenv("BRAID_CPU_DEVICES", saved.c_str(), 1);
  else
    unsetenv("BRAID_CPU_DEVICES");
  std::lock_guard lock(g_log_mu);
  seen.log = g_lines;
  return seen;
}

}  // namespace

TEST_CASE("cpu devices: BRAID_CPU_DEVICES=N, a list of core counts, and logged corrections") {
  const Seen whole = enumerate(nullptr);
  REQUIRE(whole.cores.size() == 1);
  CHECK_FALSE(whole.logged("warning: "));  // informational lines (the BLAS kernels) may come
  const int cores = whole.cores[0];
  INFO("the process may use ", cores, " cores");

  SUBCASE("N devices share the cores evenly, as before") {
    const Seen two = enumerate("2");
    CHECK(two.cores == std::vector<int>{std::max(1, cores / 2), std::max(1, cores / 2)});
    CHECK(two.logged("warning: ") == (cores < 2));
    const Seen eight = enumerate("8");
    CHECK(eight.cores == std::vector<int>(8, std::max(1, cores / 8)));
  }
  SUBCASE("over the maximum: 64 devices, and the correction is logged") {
    const Seen s = enumerate("1000");
    CHECK(s.cores.size() == 64);
    CHECK(s.logged("warning: "));
    CHECK(s.logged("BRAID_CPU_DEVICES=1000 exceeds the maximum of 64 devices; using 64"));
    const Seen huge = enumerate("99999999999999999999999");
    CHECK(huge.cores.size() == 64);
    CHECK(huge.logged("exceeds the maximum"));
  }
  SUBCASE("unparsable or below 1: one device, logged") {
    for (const char* v : {"two", "2x", "0", "-3", "1.5"}) {
      INFO("BRAID_CPU_DEVICES=", v);
      const Seen s = enumerate(v);
      CHECK(s.cores == std::vector<int>{cores});
      CHECK(s.logged(std::string("warning: ")));
      CHECK(s.logged(std::string("BRAID_CPU_DEVICES=") + (v[0] == 't' || v[1] == 'x' || v[1] == '.' ? "'" : "") + v));
    }
  }
  SUBCASE("a list gives each device its own core count") {
    const Seen s = enumerate("3,1");
    CHECK(s.cores == std::vector<int>{std::min(3, cores), 1});
    CHECK(s.logged("share cores") == (cores < 4));
    const Seen ones = enumerate(" 1 , 1 ");
    CHECK(ones.cores == std::vector<int>{1, 1});
    CHECK(ones.logged("warning: ") == (cores < 2));
    const Seen single = enumerate("1,");  // one device limited to one core
    CHECK(single.cores == std::vector<int>{1});
    CHECK_FALSE(single.logged("warning: "));
  }
  SUBCASE("a list whose sum exceeds the machine is accepted: the devices share cores (logged)") {
    const std::string v = std::to_string(cores) + "," + std::to_string(cores);
    const Seen s = enumerate(v.c_str());
    CHECK(s.cores == std::vector<int>{cores, cores});
    CHECK(s.logged("the devices share cores"));
    const Seen eight = enumerate("1,1,1,1,1,1,1,1");
    CHECK(eight.cores == std::vector<int>(8, 1));
    CHECK(eight.logged("share cores") == (cores < 8));
  }
  SUBCASE("a device asking for more cores than the process has gets them all (logged)") {
    const std::string v = "1," + std::to_string(cores + 5);
    const Seen s = enumerate(v.c_str());
    CHECK(s.cores == std::vector<int>{1, cores});
    CHECK(s.logged("device 1 asks for " + std::to_string(cores + 5) + " cores"));
  }
  SUBCASE("a bad entry: one device with all cores, logged with the entry") {
    for (const char* v : {"3,x", "2,0", "1,,1", ",2", "1,-1"}) {
      INFO("BRAID_CPU_DEVICES=", v);
      const Seen s = enumerate(v);
      CHECK(s.cores == std::vector<int>{cores});
      CHECK(s.logged("is not a positive core count; using 1 device"));
    }
  }
  SUBCASE("more than 64 entries: the first 64, logged") {
    std::string v = "1";
    for (int i = 0; i < 69; ++i) v += ",1";
    const Seen s = enumerate(v.c_str());
    CHECK(s.cores == std::vector<int>(64, 1));
    CHECK(s.logged("lists 70 devices; using the first 64"));
  }
}
