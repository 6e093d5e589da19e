#include "instance.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>

#include "host.h"

namespace braid::vk {
namespace {

// Global mutable state (with the host callbacks and the query count): the one instance per process
// and the loader handle. Guarded by g_mu; created lazily so that query has no side effects.
std::mutex g_mu;
std::unique_ptr<Instance> g_instance;
void* g_loader = nullptr;
std::atomic<uint64_t> g_validation_errors{0};

// Validation messages become host log lines; errors are also counted and printed to stderr, because
// BRAID_VULKAN_VALIDATION=1 asks for them and the test job fails on any (see scripts/test.sh).
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const char* msg = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    g_validation_errors.fetch_add(1);
    std::fprintf(stderr, "braid vulkan validation error: %s\n", msg);
    host::log(BRAID_LOG_ERROR, "validation", msg);
  } else {
    host::log(BRAID_LOG_WARNING, "validation", msg);
  }
  return VK_FALSE;
}

std::string hex_uuid(const uint8_t* u) {
  char buf[40];
  char* p = buf;
  for (int i = 0; i < 16; ++i) p += std::snprintf(p, 3, "%02x", u[i]);
  return buf;
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string props_json(const PhysicalDevice& d, const std::vector<VkQueueFamilyProperties>& families,
                       const VkPhysicalDeviceSubgroupProperties& sg) {
  std::ostringstream o;
  const auto& p = d.props;
  const auto& l = p.limits;
  o << "{\"api_version\":\"" << VK_API_VERSION_MAJOR(p.apiVersion) << '.' << VK_API_VERSION_MINOR(p.apiVersion) << '.'
    << VK_API_VERSION_PATCH(p.apiVersion) << "\",\"driver_version\":" << p.driverVersion
    << ",\"vendor_id\":" << p.vendorID << ",\"device_id\":" << p.deviceID << ",\"device_type\":\""
    << device_type_name(p.deviceType) << "\",\"uuid\":\"" << hex_uuid(d.braid_props.uuid) << "\",\"memory_heaps\":[";
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i) {
    const auto& h = d.memory.memoryHeaps[i];
    o << (i ? "," : "") << "{\"size\":" << h.size
      << ",\"device_local\":" << ((h.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? "true" : "false") << '}';
  }
  o << "],\"memory_types\":[";
  for (uint32_t i = 0; i < d.memory.memoryTypeCount; ++i) {
    const auto& t = d.memory.memoryTypes[i];
    o << (i ? "," : "") << "{\"heap\":" << t.heapIndex << ",\"flags\":" << t.propertyFlags << '}';
  }
  o << "],\"queue_families\":[";
  for (size_t i = 0; i < families.size(); ++i) {
    const auto& f = families[i];
    o << (i ? "," : "") << "{\"count\":" << f.queueCount
      << ",\"compute\":" << ((f.queueFlags & VK_QUEUE_COMPUTE_BIT) ? "true" : "false")
      << ",\"transfer\":" << ((f.queueFlags & VK_QUEUE_TRANSFER_BIT) ? "true" : "false")
      << ",\"graphics\":" << ((f.queueFlags & VK_QUEUE_GRAPHICS_BIT) ? "true" : "false")
      << ",\"timestamp_valid_bits\":" << f.timestampValidBits << '}';
  }
  o << "],\"compute_family\":" << d.compute_family << ",\"transfer_family\":" << d.transfer_family
    << ",\"subgroup_size\":" << sg.subgroupSize
    << ",\"subgroup_arithmetic\":" << (d.subgroup_arithmetic ? "true" : "false")
    << ",\"float16\":" << (d.float16 ? "true" : "false") << ",\"float64\":" << (d.float64 ? "true" : "false")
    << ",\"int64\":" << (d.int64 ? "true" : "false")
    << ",\"limits\":{\"max_compute_shared_memory_size\":" << l.maxComputeSharedMemorySize
    << ",\"max_compute_work_group_invocations\":" << l.maxComputeWorkGroupInvocations
    << ",\"max_compute_work_group_count\":[" << l.maxComputeWorkGroupCount[0] << ',' << l.maxComputeWorkGroupCount[1]
    << ',' << l.maxComputeWorkGroupCount[2] << "],\"max_compute_work_group_size\":[" << l.maxComputeWorkGroupSize[0]
    << ',' << l.maxComputeWorkGroupSize[1] << ',' << l.maxComputeWorkGroupSize[2]
    << "],\"max_storage_buffer_range\":" << l.maxStorageBufferRange
    << ",\"min_storage_buffer_offset_alignment\":" << l.minStorageBufferOffsetAlignment
    << ",\"max_push_constants_size\":" << l.maxPushConstantsSize
    << ",\"max_memory_allocation_count\":" << l.maxMemoryAllocationCount
    << ",\"timestamp_period_ns\":" << l.timestampPeriod << "}}";
  return o.str();
}

// Fills `d` from its handle; returns "" if usable, else why not.
std::string inspect(const Vk& vk, PhysicalDevice& d) {
  vk.vkGetPhysicalDeviceProperties(d.handle, &d.props);
  if (d.props.apiVersion < VK_API_VERSION_1_2) return "Vulkan 1.2 is required";
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  vk.vkGetPhysicalDeviceFeatures2(d.handle, &f2);
  if (!f12.timelineSemaphore) return "timeline semaphores are required";
  d.float64 = f2.features.shaderFloat64;
  d.int64 = f2.features.shaderInt64;
  d.float16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess;

  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  sg.pNext = &id;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sg;
  vk.vkGetPhysicalDeviceProperties2(d.handle, &p2);
  d.subgroup_size = sg.subgroupSize;
  d.subgroup_arithmetic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);

  uint32_t nf = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> families(nf);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &nf, families.data());
  bool found = false;
  for (uint32_t i = 0; i < nf; ++i) {
    if (!found && (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
      d.compute_family = i;
      d.compute_queue_count = families[i].queueCount;
      found = true;
    }
    const auto flags = families[i].queueFlags;
    if (d.transfer_family < 0 && (flags & VK_QUEUE_TRANSFER_BIT) &&
        !(flags & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)))
      d.transfer_family = i;
  }
  if (!found) return "no compute queue family";
  vk.vkGetPhysicalDeviceMemoryProperties(d.handle, &d.memory);

  auto& bp = d.braid_props;
  bp.struct_size = sizeof bp;
  std::strncpy(bp.name, d.props.deviceName, sizeof bp.name - 1);  // names are far shorter than 128
  bp.name[sizeof bp.name - 1] = '\0';
  switch (d.props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: bp.kind = BRAID_DEVICE_CPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: bp.kind = BRAID_DEVICE_GPU_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: bp.kind = BRAID_DEVICE_GPU_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: bp.kind = BRAID_DEVICE_GPU_VIRTUAL; break;
    default: bp.kind = BRAID_DEVICE_OTHER; break;
  }
  std::memcpy(bp.uuid, id.deviceUUID, 16);
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i)
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      bp.memory_bytes += d.memory.memoryHeaps[i].size;
  bp.compute_units = 0;  // Vulkan does not say
  bp.compute_queues = 1;
  bp.transfer_queues = 1;  // a transfer-only family's queue, or a second submission stream
  // Compute dtypes (float16 is storage only, as on the CPU backend): int32 and int64 elementwise.
  bp.dtype_mask = (1u << BRAID_FLOAT32) | (1u << BRAID_INT32) | (d.float64 ? 1u << BRAID_FLOAT64 : 0u) |
                  (d.int64 ? 1u << BRAID_INT64 : 0u);
  bp.host_visible = 0;
  d.json = props_json(d, families, sg);
  return "";
}

void load(Instance& in) {
  // Test hook: pretend the loader is absent (e.g. to check the zero-device path in CI).
  const char* lib = std::getenv("BRAID_VULKAN_LOADER");
  g_loader = dlopen(lib && *lib ? lib : "libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_loader == nullptr) {
    in.reason = "the Vulkan loader (libvulkan.so.1) was not found";
    return;
  }
  auto& vk = in.vk;
  vk.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(g_loader, "vkGetInstanceProcAddr"));
  if (vk.vkGetInstanceProcAddr == nullptr) {
    in.reason = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return;
  }
#define BRAID_VK_LOAD_GLOBAL(name) \
  vk.name = reinterpret_cast<PFN_##name>(vk.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  BRAID_VK_GLOBAL_FUNCS(BRAID_VK_LOAD_GLOBAL)
#undef BRAID_VK_LOAD_GLOBAL
  uint32_t version = VK_API_VERSION_1_0;
  if (vk.vkEnumerateInstanceVersion) vk.vkEnumerateInstanceVersion(&version);
  if (vk.vkCreateInstance == nullptr || version < VK_API_VERSION_1_2) {
    in.reason = "the Vulkan loader is older than 1.2";
    return;
  }

  const char* v = std::getenv("BRAID_VULKAN_VALIDATION");
  in.validation = v && *v && std::strcmp(v, "0") != 0;
  std::vector<const char*> layers, extensions;
  if (in.validation) {
    uint32_t n = 0;
    vk.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    vk.vkEnumerateInstanceLayerProperties(&n, props.data());
    bool have = false;
    for (const auto& p : props) have = have || std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    if (have) {
      layers.push_back("VK_LAYER_KHRONOS_validation");
    } else {
      std::fprintf(stderr,
                   "braid vulkan validation error: BRAID_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is "
                   "not installed\n");
      g_validation_errors.fetch_add(1);
    }
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "braid";
  app.pEngineName = "braid";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkResult r = vk.vkCreateInstance(&ci, nullptr, &in.instance);
  if (r != VK_SUCCESS) {
    in.instance = VK_NULL_HANDLE;
    in.reason = r == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan driver (ICD) was found"
                                                  : "vkCreateInstance failed: " + vk_result_name(r);
    return;
  }
#define BRAID_VK_LOAD_INSTANCE(name) \
  vk.name = reinterpret_cast<PFN_##name>(vk.vkGetInstanceProcAddr(in.instance, #name));
  BRAID_VK_INSTANCE_FUNCS(BRAID_VK_LOAD_INSTANCE)
#undef BRAID_VK_LOAD_INSTANCE
  if (in.validation && vk.vkCreateDebugUtilsMessengerEXT) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_validation;
    vk.vkCreateDebugUtilsMessengerEXT(in.instance, &mi, nullptr, &in.messenger);
  }

  uint32_t n = 0;
  vk.vkEnumeratePhysicalDevices(in.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> handles(n);
  if (n) vk.vkEnumeratePhysicalDevices(in.instance, &n, handles.data());
  std::string rejected;
  for (VkPhysicalDevice h : handles) {
    PhysicalDevice d;
    d.handle = h;
    std::string why = inspect(vk, d);
    if (!why.empty()) {
      rejected += std::string(rejected.empty() ? "" : "; ") + d.props.deviceName + ": " + why;
      continue;
    }
    bool duplicate = false;
    for (const auto& e : in.devices)
      duplicate = duplicate || std::memcmp(e.braid_props.uuid, d.braid_props.uuid, 16) == 0;
    if (duplicate) {
      host::log(BRAID_LOG_INFO, std::string("skipping ") + d.props.deviceName + ": the same device (UUID " +
                                    hex_uuid(d.braid_props.uuid) + ") was already listed by another driver");
      continue;
    }
    in.devices.push_back(std::move(d));
  }
  if (in.devices.empty())
    in.reason = handles.empty() ? "the Vulkan loader found no physical device (no driver installed?)"
                                : "no suitable Vulkan device: " + rejected;
}

}  // namespace

std::string vk_result_name(VkResult r) {
  switch (r) {
#define BRAID_VK_CASE(x) \
  case x: return #x
    BRAID_VK_CASE(VK_SUCCESS);
    BRAID_VK_CASE(VK_NOT_READY);
    BRAID_VK_CASE(VK_TIMEOUT);
    BRAID_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY);
    BRAID_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY);
    BRAID_VK_CASE(VK_ERROR_INITIALIZATION_FAILED);
    BRAID_VK_CASE(VK_ERROR_DEVICE_LOST);
    BRAID_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED);
    BRAID_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT);
    BRAID_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT);
    BRAID_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT);
    BRAID_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER);
    BRAID_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS);
#undef BRAID_VK_CASE
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

// fork(): a child inherits the parent's instance and the driver state behind it, but none of the
// driver's threads, so using them hangs (lavapipe waits forever for its own worker threads in
// vkCreateDevice). A child forked while an instance exists therefore gets an instance with no
// devices and the reason, as the CPU backend keeps fork() away from OpenBLAS (backends/cpu/fork_guard.h).
// One forked before any instance existed creates its own as usual. g_mu is held across fork() so the
// child never sees an instance half made.
bool g_forked_with_instance = false;

void lock_for_fork() { g_mu.lock(); }
void unlock_after_fork() { g_mu.unlock(); }
void child_after_fork() {
  g_forked_with_instance = g_instance != nullptr;
  g_mu.unlock();
}

constexpr const char* kForkedReason =
    "this process was fork()ed while its parent had the Vulkan instance open; Vulkan cannot be used "
    "in such a child (create the child's context before the parent's, or exec)";

Instance& instance() {
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers, [] { pthread_atfork(lock_for_fork, unlock_after_fork, child_after_fork); });
  std::lock_guard lock(g_mu);
  if (g_forked_with_instance) {
    // The inherited instance and loader are the parent's: left alone (leaked), never destroyed or
    // unloaded from here, which could run driver code waiting for threads the child does not have.
    (void)g_instance.release();
    g_loader = nullptr;
    g_instance = std::make_unique<Instance>();
    g_instance->reason = kForkedReason;
    g_forked_with_instance = false;
  }
  if (!g_instance) {
    g_instance = std::make_unique<Instance>();
    load(*g_instance);
  }
  return *g_instance;
}

void release_instance() {
  std::lock_guard lock(g_mu);
  if (g_instance) {
    auto& in = *g_instance;
    if (in.messenger != VK_NULL_HANDLE) in.vk.vkDestroyDebugUtilsMessengerEXT(in.instance, in.messenger, nullptr);
    if (in.instance != VK_NULL_HANDLE) in.vk.vkDestroyInstance(in.instance, nullptr);
    g_instance.reset();
  }
  if (g_loader != nullptr) {
    dlclose(g_loader);
    g_loader = nullptr;
  }
}

uint64_t validation_errors() { return g_validation_errors.load(); }

}  // namespace braid::vk
