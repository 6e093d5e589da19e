// An opened Vulkan device: the VkDevice, its one or two VkQueues, memory, the shared pipeline layout
// and the lazily created compute pipelines, and the failed flag (device lost / failed submission).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "instance.h"
#include "shaders.h"
#include "vk.h"
#include "vk_memory.h"

namespace braid::vk {

// Descriptor bindings every pipeline shares: 0 = parameters, 1..6 = inputs, 7..10 = outputs.
constexpr uint32_t kParamBinding = 0;
constexpr uint32_t kFirstInputBinding = 1;
constexpr uint32_t kFirstOutputBinding = 7;
constexpr uint32_t kNumBindings = 11;

// One VkQueue; several braid queues may share it (vkQueueSubmit needs external synchronisation).
struct SharedVkQueue {
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::mutex mu;
};

struct Device {
  explicit Device(const PhysicalDevice& pd);  // throws std::runtime_error with the reason
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Vk& vk() const { return vk_; }
  VkDevice handle() const { return device_; }
  const PhysicalDevice& physical() const { return pd_; }
  uint32_t compute_family() const { return compute_.family; }
  uint32_t transfer_family() const { return transfer_ ? transfer_->family : compute_.family; }
  SharedVkQueue& vk_queue(bool transfer) { return transfer && transfer_ ? *transfer_ : compute_; }
  int memory_type(uint32_t bits, VkMemoryPropertyFlags want) const;

  Allocator& device_memory() { return *device_memory_; }
  // Bytes this device holds of each memory heap. reserve_heap fails (and reserves nothing) when the
  // heap would go over its reported size: the driver's own check cannot be relied on.
  bool reserve_heap(uint32_t heap, uint64_t bytes);
  void release_heap(uint32_t heap, uint64_t bytes);
  uint64_t heap_used(uint32_t heap) const { return heap < VK_MAX_MEMORY_HEAPS ? heap_used_[heap].load() : 0; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }
  VkBuffer dummy_buffer() const { return dummy_->buffer; }
  uint64_t dummy_offset() const { return dummy_->offset; }
  // The pipeline of a shader, created on first use; VK_NULL_HANDLE if creation failed.
  VkPipeline pipeline(ShaderId id);
  // A pipeline of a shader made at run time (fused_codegen.h), cached under `key` for the device's
  // life: `make` returns its SPIR-V, or none with the error set; VK_NULL_HANDLE with `error` set if
  // compiling or creating it failed (not cached: a later call tries again). Kept without a bound:
  // one per distinct program the application's graphs run.
  VkPipeline generated_pipeline(const std::string& key,
                                const std::function<std::vector<uint32_t>(std::string& error)>& make,
                                std::string& error);

  // Test hook: BRAID_VULKAN_FAIL_SUBMIT=n (read at device_open) makes the (n+1)-th vkQueueSubmit of the
  // device fail as if the device were lost, so tests can check the failure path without a real loss.
  bool inject_submit_failure() { return fail_submit_in_.fetch_sub(1) == 0; }

  // A queue's timeline semaphore and the highest ticket issued on it. Timelines outlive their queue:
  // another queue's submitted batch may still wait on one (a device-side wait for a value long reached,
  // which the driver may still be looking at), and a VkSemaphore must not be destroyed while a pending
  // batch names it. So a destroyed queue gives its timeline back; the next queue created continues it
  // above `last` (waits for lower values stay satisfied), and the device destroys them when it closes,
  // after vkDeviceWaitIdle.
  struct Timeline {
    VkSemaphore sem = VK_NULL_HANDLE;
    uint64_t last = 0;
  };
  Timeline acquire_timeline();  // throws std::runtime_error
  void release_timeline(Timeline t);

  // Device loss or a failed submission: every later submission fails with `failure()`.
  void mark_failed(const std::string& why);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  std::string failure();

 private:
  void destroy();

  const PhysicalDevice& pd_;
  const Vk& vk_;
  VkDevice device_ = VK_NULL_HANDLE;
  SharedVkQueue compute_;
  std::unique_ptr<SharedVkQueue> transfer_;
  std::array<std::atomic<uint64_t>, VK_MAX_MEMORY_HEAPS> heap_used_{};
  std::unique_ptr<Allocator> device_memory_;
  braid_backend_buffer_t* dummy_ = nullptr;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipeline create_pipeline(const uint32_t* words, size_t count);
  std::mutex pipelines_mu_;
  std::vector<VkPipeline> pipelines_;
  std::unordered_map<std::string, VkPipeline> generated_;  // pipelines_mu_
  std::mutex timelines_mu_;
  std::vector<Timeline> spare_timelines_;
  std::atomic<bool> failed_{false};
  std::atomic<int64_t> fail_submit_in_{-1};  // < 0: never
  std::mutex failure_mu_;
  std::string failure_;
};

}  // namespace braid::vk

// The ABI's opaque device handle is the Device.
struct braid_backend_device_t : braid::vk::Device {
  using Device::Device;
};
