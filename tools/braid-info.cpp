// braid-info: what libbraid found on this machine — the backend plugins (with their ABI versions, and
// the reason when one has zero devices or did not load) and every device with its properties.
//
//   braid-info          human-readable report
//   braid-info --json   one JSON object: {"version", "backends": [...], "devices": [...]}
//   braid-info --topology  per device: cores, SMT, NUMA nodes, caches, vector ISA, pinned CPUs; per
//                          device pair: the path a copy between them takes
//   braid-info --topology --measure  also what each device reaches (braid_device_measure: matmul
//                          FLOP/s, copy and host<->device bandwidth) and each pair's copy bandwidth
//                          and latency, measured now (seconds per device)
//
// It honours the context's environment (BRAID_BACKENDS, BRAID_BACKEND_PATH, BRAID_CPU_DEVICES, ...),
// so it also answers "what would my program see with these settings". A bad command line prints the
// usage on stderr and exits with status 2 (tools/common/cli.h reads it).
#include <braid.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "json.h"

namespace {

using braid::tools::JsonObject;

struct Backend {
  std::string name, path, reason;
  uint32_t abi_major = 0, abi_minor = 0;
  bool loaded = false;
  int32_t devices = 0;
};

struct Device {
  braid_device_info info{};
};

// The context owns every string in the info structs, so the report is gathered while it is alive.
struct Report {
  uint32_t version = 0;
  std::vector<Backend> backends;
  std::vector<Device> devices;
};

const char* kind_name(braid_device_kind kind) {
  switch (kind) {
    case BRAID_DEVICE_CPU: return "cpu";
    case BRAID_DEVICE_GPU_DISCRETE: return "gpu-discrete";
    case BRAID_DEVICE_GPU_INTEGRATED: return "gpu-integrated";
    case BRAID_DEVICE_GPU_VIRTUAL: return "gpu-virtual";
    case BRAID_DEVICE_OTHER: return "other";
  }
  return "unknown";
}

std::string abi_string(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

// A plugin that did not load reported no version (0.0, which no ABI uses): shown as unknown.
std::string plugin_abi_string(const Backend& b) { return b.abi_major == 0 ? "" : abi_string(b.abi_major, b.abi_minor); }

// Canonical 8-4-4-4-12 form; "" when the backend does not know the UUID (all zero).
std::string uuid_string(const uint8_t (&uuid)[16]) {
  bool any = false;
  for (const uint8_t b : uuid) any |= b != 0;
  if (!any) return "";
  std::string out;
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", uuid[i]);
    out += hex;
  }
  return out;
}

std::vector<std::string> dtype_names(uint32_t mask) {
  std::vector<std::string> names;
  for (int d = 0; d < BRAID_DTYPE_COUNT; ++d)
    if (mask & (1u << d)) names.emplace_back(braid_dtype_name(static_cast<braid_dtype>(d)));
  return names;
}

std::string human_bytes(uint64_t bytes) {
  if (bytes == 0) return "unknown";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

bool fail(const char* what, braid_status s) {
  std::fprintf(stderr, "braid-info: %s failed: %s: %s\n", what, braid_status_name(s), braid_last_error());
  return false;
}

bool gather(braid_context ctx, Report& r) {
  r.version = braid_version();
  int32_t n = 0;
  if (braid_status s = braid_context_backend_count(ctx, &n); s != BRAID_OK)
    return fail("braid_context_backend_count", s);
  for (int32_t i = 0; i < n; ++i) {
    braid_backend_info bi{};
    bi.struct_size = sizeof bi;
    if (braid_status s = braid_context_backend_info(ctx, i, &bi); s != BRAID_OK)
      return fail("braid_context_backend_info", s);
    r.backends.push_back({bi.name ? bi.name : "", bi.path ? bi.path : "", bi.reason ? bi.reason : "", bi.abi_major,
                          bi.abi_minor, bi.loaded != 0, bi.device_count});
  }
  if (braid_status s = braid_context_device_count(ctx, &n); s != BRAID_OK) return fail("braid_context_device_count", s);
  for (braid_device d = 0; d < n; ++d) {
    Device dev;
    dev.info.struct_size = sizeof dev.info;
    if (braid_status s = braid_context_device_info(ctx, d, &dev.info); s != BRAID_OK)
      return fail("braid_context_device_info", s);
    r.devices.push_back(dev);
  }
  return true;
}

void print_json(const Report& r) {
  std::vector<std::string> backends, devices;
  for (const Backend& b : r.backends) {
    backends.push_back(JsonObject()
                           .add("name", b.name)
                           .add("abi", plugin_abi_string(b))
                           .add("devices", b.devices)
                           .add("reason", b.reason)
                           .add("loaded", b.loaded)
                           .add("path", b.path)
                           .str());
  }
  for (const Device& dev : r.devices) {
    const braid_device_info& d = dev.info;
    std::vector<std::string> dtypes;
    for (const std::string& name : dtype_names(d.dtype_mask)) dtypes.push_back(braid::tools::json_string(name));
    devices.push_back(JsonObject()
                          .add("id", d.id)
                          .add("backend", d.backend)
                          .add("name", d.name)
                          .add("kind", kind_name(d.kind))
                          .add("backend_index", d.backend_index)
                          .add("uuid", uuid_string(d.uuid))
                          .add("memory_bytes", d.memory_bytes)
                          .add("compute_units", d.compute_units)
                          .add("compute_queues", d.compute_queues)
                          .add("transfer_queues", d.transfer_queues)
                          .add("l1_cache_bytes", d.l1_cache_bytes)
                          .add("l2_cache_bytes", d.l2_cache_bytes)
                          .add("l3_cache_bytes", d.l3_cache_bytes)
                          .add_raw("dtypes", braid::tools::json_array(dtypes))
                          .add_raw("properties", d.properties_json)
                          .str());
  }
  std::printf("%s\n", JsonObject()
                          .add("version", abi_string(r.version >> 16, r.version & 0xffffu))
                          .add_raw("backends", braid::tools::json_array(backends))
                          .add_raw("devices", braid::tools::json_array(devices))
                          .str()
                          .c_str());
}

void print_human(const Report& r) {
  std::printf("libbraid ABI %s\n\nBackends (%zu):\n", abi_string(r.version >> 16, r.version & 0xffffu).c_str(),
              r.backends.size());
  if (r.backends.empty()) std::printf("  none found (searched next to libbraid and in BRAID_BACKEND_PATH)\n");
  for (const Backend& b : r.backends) {
    const std::string abi = plugin_abi_string(b);
    std::printf("  %-8s ABI %-5s %2d device%s  %s%s\n", b.name.c_str(), abi.empty() ? "-" : abi.c_str(), b.devices,
                b.devices == 1 ? " " : "s", b.loaded ? "" : "[not loaded] ", b.path.c_str());
    if (!b.reason.empty()) std::printf("           reason: %s\n", b.reason.c_str());
  }
  std::printf("\nDevices (%zu):\n", r.devices.size());
  for (const Device& dev : r.devices) {
    const braid_device_info& d = dev.info;
    std::string dtypes;
    for (const std::string& name : dtype_names(d.dtype_mask)) dtypes += (dtypes.empty() ? "" : " ") + name;
    const std::string uuid = uuid_string(d.uuid);
    std::printf("  %s  %s\n", d.id, d.name);
    std::printf("    backend          %s (device %d of it)\n", d.backend, d.backend_index);
    std::printf("    kind             %s\n", kind_name(d.kind));
    std::printf("    memory           %s\n", human_bytes(d.memory_bytes).c_str());
    std::printf("    compute units    %d\n", d.compute_units);
    std::printf("    queues           %d compute, %d transfer\n", d.compute_queues, d.transfer_queues);
    std::printf("    caches           L1 %s, L2 %s, L3 %s\n", human_bytes(d.l1_cache_bytes).c_str(),
                human_bytes(d.l2_cache_bytes).c_str(), human_bytes(d.l3_cache_bytes).c_str());
    std::printf("    dtypes           %s\n", dtypes.c_str());
    std::printf("    uuid             %s\n", uuid.empty() ? "unknown" : uuid.c_str());
    if (std::string_view(d.properties_json) != "{}") std::printf("    properties       %s\n", d.properties_json);
  }
}

// The string value of "key" in a flat JSON object text ("" when absent): enough for the few
// properties the topology view prints, without a JSON parser.
std::string json_field(std::string_view json, std::string_view key) {
  std::string quoted = "\"";
  quoted += key;
  quoted += '"';
  size_t at = json.find(quoted);
  if (at == std::string_view::npos) return "";
  at = json.find(':', at + quoted.size());
  if (at == std::string_view::npos) return "";
  at = json.find('"', at);
  if (at == std::string_view::npos) return "";
  const size_t end = json.find('"', at + 1);
  return end == std::string_view::npos ? "" : std::string(json.substr(at + 1, end - at - 1));
}

// Logical CPUs in a sysfs CPU list ("0-3,8,10-11"); 0 when it cannot be read.
int count_cpu_list(const std::string& path) {
  std::ifstream f(path);
  std::string list;
  if (!(f >> list)) return 0;
  int n = 0;
  size_t at = 0;
  while (at < list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string part = list.substr(at, comma - at);
    const size_t dash = part.find('-');
    n += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    at = comma + 1;
  }
  return n;
}

int numa_nodes() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 && std::isdigit(static_cast<unsigned char>(name[4]))) ++n;
  }
  return n;
}

// The path braid_copy takes between two devices (runtime/ops/copy.cpp): a copy kernel on one device; the
// backend's own device-to-device copy within one backend; across backends, a direct copy by the
// non-host side's transfer queue when one side is host memory (the CPU backend's buffers are; the
// Vulkan and CUDA backends' are not), else staged through host memory in double-buffered chunks.
std::string copy_path(const braid_device_info& a, const braid_device_info& b) {
  const std::string_view ba = a.backend, bb = b.backend;
  std::string path;
  if (std::string_view(a.id) == b.id) {
    path = "copy kernel on the device";
  } else if (ba == bb) {
    path = "device to device within the ";
    path += ba;
    path += ba == "cpu" ? " backend (its transfer queue copies between host buffers)"
                        : " backend (its transfer queue, device to device)";
  } else if (ba == "cpu" || bb == "cpu") {
    path = "direct: ";
    path += ba == "cpu" ? b.id : a.id;
    path += "'s transfer queue reads/writes the host buffer (one copy)";
  } else {
    path = "staged through host memory (two copies, double-buffered chunks; needs a host-memory device)";
  }
  return path;
}

// A copy between two devices, measured: bytes per second of a 64 MiB copy (best of three) and the
// latency of a 4-byte one (median of 21), each including the wait for its result.
struct PairFigures {
  double bytes_per_s = 0, latency_s = 0;
  bool ok = false;
};

PairFigures measure_pair(braid_context ctx, braid_device from, braid_device to) {
  using Clock = std::chrono::steady_clock;
  PairFigures f;
  auto timed_copy = [&](int64_t n) -> double {
    braid_tensor x = nullptr, y = nullptr;
    double t = -1;
    if (braid_full(ctx, from, BRAID_FLOAT32, 1, &n, 1.0, &x) == BRAID_OK && braid_tensor_wait_to_read(x) == BRAID_OK) {
      const auto t0 = Clock::now();
      if (braid_copy(x, to, &y) == BRAID_OK && braid_tensor_wait_to_read(y) == BRAID_OK)
        t = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if (y) braid_tensor_release(y);
    if (x) braid_tensor_release(x);
    return t;
  };
  constexpr int64_t kBig = int64_t{16} << 20;  // floats: 64 MiB
  double best = 1e300;
  for (int i = 0; i < 4; ++i) {  // the first is a warm-up
    const double t = timed_copy(kBig);
    if (t < 0) return f;
    if (i > 0) best = std::min(best, t);
  }
  std::vector<double> small;
  for (int i = 0; i < 22; ++i) {
    const double t = timed_copy(1);
    if (t < 0) return f;
    if (i > 0) small.push_back(t);
  }
  std::sort(small.begin(), small.end());
  f.bytes_per_s = double(kBig) * 4 / best;
  f.latency_s = small[small.size() / 2];
  f.ok = true;
  return f;
}

void print_measured(braid_context ctx, braid_device dev) {
  braid_device_perf p{};
  p.struct_size = sizeof p;
  if (braid_device_measure(ctx, dev, &p) != BRAID_OK) {
    std::printf("    measured         failed: %s\n", braid_last_error());
    return;
  }
  std::printf(
      "    measured         matmul %.1f GFLOP/s float32, %.1f float64; copy within %.1f GB/s (read +\n"
      "                     written); host->device %.1f GB/s, device->host %.1f GB/s (%.2f s)\n",
      p.matmul_flops_f32 / 1e9, p.matmul_flops_f64 / 1e9, p.copy_bytes_per_s / 1e9, p.host_to_device_bytes_per_s / 1e9,
      p.device_to_host_bytes_per_s / 1e9, p.seconds);
}

void print_topology(braid_context ctx, const Report& r, bool measure) {
  const int smt = count_cpu_list("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
  const int numa = numa_nodes();
  std::printf("Devices (%zu):\n", r.devices.size());
  for (const Device& dev : r.devices) {
    const braid_device_info& d = dev.info;
    std::printf("  %s  %s (%s backend, %s)\n", d.id, d.name, d.backend, kind_name(d.kind));
    const bool host = std::string_view(d.backend) == "cpu";
    std::printf("    cores            %d%s\n", d.compute_units,
                host                  ? " (host cores this device runs on)"
                : d.compute_units > 0 ? " compute units"
                                      : " (not reported)");
    if (host) {
      std::printf("    SMT              %s\n",
                  smt > 0 ? (std::to_string(smt) + " thread(s) per core (sysfs)").c_str() : "unknown");
      std::printf("    NUMA nodes       %s\n", numa > 0 ? (std::to_string(numa) + " (sysfs)").c_str() : "unknown");
    }
    std::printf("    caches           L1 %s, L2 %s, L3 %s (as the backend reports them)\n",
                human_bytes(d.l1_cache_bytes).c_str(), human_bytes(d.l2_cache_bytes).c_str(),
                human_bytes(d.l3_cache_bytes).c_str());
    const std::string_view props = d.properties_json ? d.properties_json : "{}";
    const std::string isa = json_field(props, "vector_isa"), blas = json_field(props, "blas_core");
    if (!isa.empty()) std::printf("    vector ISA       %s\n", isa.c_str());
    if (!blas.empty()) std::printf("    BLAS kernels     %s\n", blas.c_str());
    if (const size_t at = props.find("\"cpus\": ["); at != std::string_view::npos)
      std::printf("    pinned to CPUs   %s\n", std::string(props.substr(at + 9, props.find(']', at) - at - 9)).c_str());
    std::printf("    memory           %s, %s\n", human_bytes(d.memory_bytes).c_str(),
                host ? "host memory" : "device memory (not host-visible)");
    if (measure) print_measured(ctx, static_cast<braid_device>(&dev - r.devices.data()));
  }
  std::printf("\nCopy paths (braid_copy from -> to)%s:\n",
              measure ? ", measured: 64 MiB bandwidth, 4-byte latency" : "");
  for (const Device& a : r.devices)
    for (const Device& b : r.devices) {
      std::printf("  %-10s -> %-10s %s\n", a.info.id, b.info.id, copy_path(a.info, b.info).c_str());
      if (!measure) continue;
      const PairFigures f = measure_pair(ctx, static_cast<braid_device>(&a - r.devices.data()),
                                         static_cast<braid_device>(&b - r.devices.data()));
      if (f.ok)
        std::printf("  %-10s    %-10s %.2f GB/s, %.1f us\n", "", "", f.bytes_per_s / 1e9, f.latency_s * 1e6);
      else
        std::printf("  %-10s    %-10s measurement failed: %s\n", "", "", braid_last_error());
    }
}

constexpr const char* kUsage = "usage: braid-info [--json | --topology [--measure]] [--help] [--version]\n";
constexpr const char* kHelp =
    "Lists the backend plugins libbraid loads (ABI version, device count, reason for zero\n"
    "devices) and every device with its properties. Honours BRAID_BACKENDS, BRAID_BACKEND_PATH\n"
    "and BRAID_CPU_DEVICES.\n"
    "  --json      one JSON object: {\"version\", \"backends\": [...], \"devices\": [...]}\n"
    "  --topology  per device: cores, SMT, NUMA nodes, caches, vector ISA, pinned CPUs; and the\n"
    "              path a copy takes between every pair of devices\n"
    "  --measure   with --topology: also measure each device (matmul FLOP/s, copy and\n"
    "              host<->device bandwidth: braid_device_measure) and each pair's copy bandwidth\n"
    "              and latency (takes seconds per device)\n";

struct Options {
  bool json = false, topology = false, measure = false;
};

Options parse(int argc, char** argv) {
  enum { kJson = CLI_FIRST, kTopology, kMeasure };
  static const option options[] = {
      {"json", no_argument, nullptr, kJson},
      {"topology", no_argument, nullptr, kTopology},
      {"measure", no_argument, nullptr, kMeasure},
      CLI_STANDARD_OPTIONS,
      {},
  };
  cli_parser cli = cli_parser_init("braid-info", kUsage, kHelp, options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kJson: o.json = true; break;
      case kTopology: o.topology = true; break;
      case kMeasure: o.measure = true; break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  if (o.measure && !o.topology) cli_fail(&cli, "--measure goes with --topology");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [json, topology, measure] = parse(argc, argv);
  braid_context ctx = nullptr;
  if (braid_status s = braid_context_create(nullptr, &ctx); s != BRAID_OK) {
    fail("braid_context_create", s);
    return 1;
  }
  Report report;
  const bool ok = gather(ctx, report);
  if (ok) {
    if (topology)
      print_topology(ctx, report, measure);
    else if (json)
      print_json(report);
    else
      print_human(report);
  }
  braid_context_release(ctx);
  return ok ? 0 : 1;
}
