// The Vulkan entry points the plugin uses, loaded at run time from libvulkan.so.1 (never linked: a
// machine without the loader must still load the plugin and report zero devices).
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace braid::vk {

// X(name) for each function; instance-level and device-level alike are fetched through
// vkGetInstanceProcAddr once the instance exists (one loader dispatch per call is cheap enough).
#define BRAID_VK_GLOBAL_FUNCS(X) \
  X(vkCreateInstance)            \
  X(vkEnumerateInstanceVersion)  \
  X(vkEnumerateInstanceLayerProperties)

#define BRAID_VK_INSTANCE_FUNCS(X)            \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)                      \
  X(vkCreateDebugUtilsMessengerEXT)           \
  X(vkDestroyDebugUtilsMessengerEXT)          \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkDeviceWaitIdle)                         \
  X(vkQueueSubmit)                            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkBindBufferMemory)                       \
  X(vkCreateSemaphore)                        \
  X(vkDestroySemaphore)                       \
  X(vkSignalSemaphore)                        \
  X(vkWaitSemaphores)                         \
  X(vkGetSemaphoreCounterValue)               \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkResetCommandBuffer)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkCmdCopyBuffer)                          \
  X(vkCmdFillBuffer)                          \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdDispatch)                            \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkResetDescriptorPool)                    \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)

struct Vk {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define BRAID_VK_MEMBER(name) PFN_##name name = nullptr;
  BRAID_VK_GLOBAL_FUNCS(BRAID_VK_MEMBER)
  BRAID_VK_INSTANCE_FUNCS(BRAID_VK_MEMBER)
#undef BRAID_VK_MEMBER
};

// "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST"
std::string vk_result_name(VkResult r);

}  // namespace braid::vk
