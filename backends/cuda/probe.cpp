#include "probe.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace braid::cuda {
namespace {

struct Cache {
  std::once_flag once;
  Probe probe;
  std::string reason;             // backing store of probe.reason when it is not a literal
  std::vector<std::string> json;  // per device
};
Cache& probe_cache() {
  static Cache c;  // one per process: the devices do not change while it runs
  return c;
}

// CUDA cannot be used in a child forked after the parent initialised it: the child's first call fails
// or hangs. The child therefore reports zero devices with the reason (the probe ran in the parent, so
// the cached count is the parent's).
std::atomic<bool> g_forked_after_init{false};
void on_fork_child() { g_forked_after_init.store(true); }
constexpr Probe kForked{0,
                        "CUDA was initialised before fork(): a forked child cannot use it (exec, or create the "
                        "context before initialising CUDA in the parent)"};

void run_probe(Cache& c) {
  pthread_atfork(nullptr, nullptr, on_fork_child);
  // cudart would dlopen libcuda itself, but checking first gives a clearer reason and avoids touching
  // the runtime at all on machines without a driver.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    c.probe = {0, "no NVIDIA driver (libcuda.so.1 not found)"};
    return;
  }
  dlclose(lib);  // cudart keeps its own reference once it initialises
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    c.reason = std::string("CUDA runtime: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear it so that it is not reported by a later call
    c.probe = {0, c.reason.c_str()};
    return;
  }
  if (n <= 0) {
    c.probe = {0, "no CUDA device"};
    return;
  }
  c.probe = {n, ""};
  c.json.resize(static_cast<size_t>(n));
}

}  // namespace

const Probe& probe() {
  Cache& c = probe_cache();
  std::call_once(c.once, [&] { run_probe(c); });
  if (g_forked_after_init.load() && c.probe.count > 0) return kForked;
  return c.probe;
}

braid_status fill_props(int index, braid_backend_device_props* out) {
  if (index < 0 || index >= probe().count) return BRAID_ERR_NOT_FOUND;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
    cudaGetLastError();
    return BRAID_ERR_DEVICE;
  }
  braid_backend_device_props r{};
  r.struct_size = sizeof(r);
  const size_t len = std::min(strnlen(p.name, sizeof(p.name)), sizeof(r.name) - 1);
  std::memcpy(r.name, p.name, len);
  r.name[len] = '\0';
  r.kind = p.integrated ? BRAID_DEVICE_GPU_INTEGRATED : BRAID_DEVICE_GPU_DISCRETE;
  std::memcpy(r.uuid, p.uuid.bytes, sizeof(r.uuid));
  r.memory_bytes = p.totalGlobalMem;
  r.compute_units = p.multiProcessorCount;
  r.compute_queues = 4;   // streams the host may create; CUDA has no hard limit
  r.transfer_queues = 2;  // two copy engines on every recent GPU
  r.l1_cache_bytes = 0;   // unknown: CUDA reports shared memory, not the L1 it is carved from
  r.l2_cache_bytes = static_cast<uint64_t>(p.l2CacheSize);
  r.l3_cache_bytes = 0;
  // Dtypes with compute kernels, as the CPU backend counts them (float16/bfloat16: copy/fill only).
  r.dtype_mask =
      (1u << BRAID_FLOAT32) | (1u << BRAID_FLOAT64) | (1u << BRAID_INT32) | (1u << BRAID_INT64) | (1u << BRAID_UINT8);
  r.host_visible = 0;
  const size_t n = std::min<size_t>(out->struct_size, sizeof(r));
  std::memcpy(out, &r, n);
  out->struct_size = static_cast<uint32_t>(n);
  return BRAID_OK;
}

const char* props_json(int index) {
  Cache& c = probe_cache();
  if (index < 0 || index >= probe().count) return nullptr;
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::string& j = c.json[static_cast<size_t>(index)];
  if (!j.empty()) return j.c_str();
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  int drv = 0, rt = 0, pools = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index);
  std::string peers;
  for (int o = 0; o < probe().count; ++o) {
    int can = 0;
    if (o != index && cudaDeviceCanAccessPeer(&can, index, o) == cudaSuccess && can) {
      if (!peers.empty()) peers.push_back(',');
      peers.append(std::to_string(o));
    }
  }
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "{\"compute_capability\":\"%d.%d\",\"pci_bus_id\":\"%04x:%02x:%02x.0\",\"warp_size\":%d,"
                "\"max_threads_per_block\":%d,\"shared_memory_per_block\":%zu,\"l2_cache_bytes\":%d,"
                "\"memory_bus_width\":%d,\"async_engines\":%d,\"memory_pools\":%s,\"driver_version\":%d,"
                "\"runtime_version\":%d,\"peer_access\":[%s]}",
                p.major, p.minor, p.pciDomainID, p.pciBusID, p.pciDeviceID, p.warpSize, p.maxThreadsPerBlock,
                p.sharedMemPerBlock, p.l2CacheSize, p.memoryBusWidth, p.asyncEngineCount, pools ? "true" : "false", drv,
                rt, peers.c_str());
  j = buf;
  return j.c_str();
}

}  // namespace braid::cuda
