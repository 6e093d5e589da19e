// The plugin-wide Vulkan state: the loader (dlopen'ed lazily), one VkInstance, the usable physical
// devices (Vulkan 1.2 with timeline semaphores and a compute queue, duplicates by UUID dropped), and
// why there are none when there are none.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "vk.h"

namespace braid::vk {

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t compute_family = 0;
  int64_t transfer_family = -1;  // a family with TRANSFER and without COMPUTE/GRAPHICS, or -1
  uint32_t compute_queue_count = 1;
  uint32_t subgroup_size = 1;
  bool subgroup_arithmetic = false;  // subgroupAdd/Max/Min in compute shaders
  bool float16 = false;              // shaderFloat16 + storageBuffer16BitAccess
  bool float64 = false;
  bool int64 = false;
  braid_backend_device_props braid_props{};
  std::string json;  // device_props_json
};

struct Instance {
  Vk vk;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices;
  std::string reason;  // why devices is empty
  bool validation = false;
};

// The instance, created on first use (thread-safe). Never NULL; devices may be empty (see reason).
Instance& instance();
// Destroys the instance and unloads the loader (the last shutdown; all devices are closed).
void release_instance();
// Number of validation messages of severity error seen since the instance was created.
uint64_t validation_errors();

}  // namespace braid::vk
