#include "device.h"

#include <cstdlib>
#include <stdexcept>

#include "host.h"

namespace braid::vk {
namespace {
// 64 MiB blocks: big enough that a model's tensors need few allocations, small enough to stay under
// maxStorageBufferRange (128 MiB on lavapipe) and not to strand much memory.
constexpr uint64_t kBlockSize = uint64_t{64} << 20;

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + vk_result_name(r));
}
}  // namespace

Device::Device(const PhysicalDevice& pd) : pd_(pd), vk_(instance().vk) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi[2] = {{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO},
                                   {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}};
  qi[0].queueFamilyIndex = pd.compute_family;
  qi[0].queueCount = 1;
  qi[0].pQueuePriorities = &priority;
  uint32_t nq = 1;
  if (pd.transfer_family >= 0) {
    qi[1].queueFamilyIndex = static_cast<uint32_t>(pd.transfer_family);
    qi[1].queueCount = 1;
    qi[1].pQueuePriorities = &priority;
    nq = 2;
  }
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.timelineSemaphore = VK_TRUE;
  f12.shaderFloat16 = pd.float16;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = pd.float16;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.features.shaderFloat64 = pd.float64;
  f2.features.shaderInt64 = pd.int64;
  f2.pNext = &f11;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &f2;
  ci.queueCreateInfoCount = nq;
  ci.pQueueCreateInfos = qi;
  check(vk_.vkCreateDevice(pd.handle, &ci, nullptr, &device_), "vkCreateDevice");
  compute_.family = pd.compute_family;
  vk_.vkGetDeviceQueue(device_, pd.compute_family, 0, &compute_.queue);
  if (pd.transfer_family >= 0) {
    transfer_ = std::make_unique<SharedVkQueue>();
    transfer_->family = static_cast<uint32_t>(pd.transfer_family);
    vk_.vkGetDeviceQueue(device_, transfer_->family, 0, &transfer_->queue);
  }
  try {
    device_memory_ = std::make_unique<Allocator>(*this, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, kBlockSize);
    if (device_memory_->allocate(256, &dummy_) != BRAID_OK) throw std::runtime_error("cannot allocate device memory");
    VkDescriptorSetLayoutBinding b[kNumBindings];
    for (uint32_t i = 0; i < kNumBindings; ++i)
      b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = kNumBindings;
    li.pBindings = b;
    check(vk_.vkCreateDescriptorSetLayout(device_, &li, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
    VkPipelineLayoutCreateInfo pi{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pi.setLayoutCount = 1;
    pi.pSetLayouts = &set_layout_;
    check(vk_.vkCreatePipelineLayout(device_, &pi, nullptr, &pipeline_layout_), "vkCreatePipelineLayout");
  } catch (...) {
    destroy();
    throw;
  }
  pipelines_.assign(kShaderCount, VK_NULL_HANDLE);
  if (const char* n = std::getenv("BRAID_VULKAN_FAIL_SUBMIT"); n && *n) fail_submit_in_ = std::atoll(n);
}

Device::~Device() { destroy(); }

void Device::destroy() {
  if (device_ == VK_NULL_HANDLE) return;
  vk_.vkDeviceWaitIdle(device_);
  for (const Timeline& t : spare_timelines_) vk_.vkDestroySemaphore(device_, t.sem, nullptr);
  spare_timelines_.clear();
  for (VkPipeline p : pipelines_)
    if (p) vk_.vkDestroyPipeline(device_, p, nullptr);
  pipelines_.clear();
  for (const auto& [key, p] : generated_) vk_.vkDestroyPipeline(device_, p, nullptr);
  generated_.clear();
  if (pipeline_layout_) vk_.vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
  if (set_layout_) vk_.vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (dummy_) device_memory_->free(dummy_);
  dummy_ = nullptr;
  device_memory_.reset();
  vk_.vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
}

Device::Timeline Device::acquire_timeline() {
  {
    std::lock_guard lock(timelines_mu_);
    if (!spare_timelines_.empty()) {
      Timeline t = spare_timelines_.back();
      spare_timelines_.pop_back();
      return t;
    }
  }
  VkSemaphoreTypeCreateInfo ti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  si.pNext = &ti;
  Timeline t;
  if (vk_.vkCreateSemaphore(device_, &si, nullptr, &t.sem) != VK_SUCCESS)
    throw std::runtime_error("vkCreateSemaphore (timeline) failed");
  return t;
}

void Device::release_timeline(Timeline t) {
  std::lock_guard lock(timelines_mu_);
  spare_timelines_.push_back(t);
}

bool Device::reserve_heap(uint32_t heap, uint64_t bytes) {
  if (heap >= pd_.memory.memoryHeapCount) return false;
  const uint64_t size = pd_.memory.memoryHeaps[heap].size;
  uint64_t used = heap_used_[heap].load();
  do {
    if (bytes > size || used > size - bytes) return false;
  } while (!heap_used_[heap].compare_exchange_weak(used, used + bytes));
  return true;
}

void Device::release_heap(uint32_t heap, uint64_t bytes) {
  if (heap < VK_MAX_MEMORY_HEAPS) heap_used_[heap].fetch_sub(bytes);
}

int Device::memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
  const auto& m = pd_.memory;
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (m.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  return -1;
}

VkPipeline Device::create_pipeline(const uint32_t* words, size_t count) {
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = count * 4;
  mi.pCode = words;
  VkShaderModule module;
  if (vk_.vkCreateShaderModule(device_, &mi, nullptr, &module) != VK_SUCCESS) return VK_NULL_HANDLE;
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = pipeline_layout_;
  VkPipeline p = VK_NULL_HANDLE;
  if (vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p) != VK_SUCCESS) p = VK_NULL_HANDLE;
  vk_.vkDestroyShaderModule(device_, module, nullptr);
  return p;
}

VkPipeline Device::pipeline(ShaderId id) {
  std::lock_guard lock(pipelines_mu_);
  VkPipeline& p = pipelines_[static_cast<size_t>(id)];
  if (p) return p;
  const ShaderCode code = shader_code(id);
  p = create_pipeline(code.data, code.words);
  return p;
}

VkPipeline Device::generated_pipeline(const std::string& key,
                                      const std::function<std::vector<uint32_t>(std::string& error)>& make,
                                      std::string& error) {
  {
    std::lock_guard lock(pipelines_mu_);
    if (auto it = generated_.find(key); it != generated_.end()) return it->second;
  }
  // Compiled outside the lock (milliseconds): two threads asking for one new program both compile it,
  // and the second keeps the first one's pipeline.
  const std::vector<uint32_t> words = make(error);
  if (words.empty()) return VK_NULL_HANDLE;
  VkPipeline made = create_pipeline(words.data(), words.size());
  if (made == VK_NULL_HANDLE) {
    error = "vkCreateComputePipelines failed";
    return VK_NULL_HANDLE;
  }
  std::lock_guard lock(pipelines_mu_);
  auto [it, inserted] = generated_.emplace(key, made);
  if (!inserted) vk_.vkDestroyPipeline(device_, made, nullptr);
  return it->second;
}

void Device::mark_failed(const std::string& why) {
  {
    std::lock_guard lock(failure_mu_);
    if (failed_.load()) return;
    failure_ = why;
    failed_.store(true, std::memory_order_release);
  }
  host::log(BRAID_LOG_ERROR, "device " + std::string(pd_.props.deviceName) + " failed: " + why);
}

std::string Device::failure() {
  std::lock_guard lock(failure_mu_);
  return failure_;
}

}  // namespace braid::vk
