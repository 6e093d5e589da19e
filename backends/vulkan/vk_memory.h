// Device memory: large VkDeviceMemory blocks, each with one VkBuffer over all of it, sub-allocated
// first-fit (never one VkDeviceMemory per tensor: drivers cap the allocation count, and allocating is
// slow). Requests larger than half a block get a dedicated allocation. The runtime's caching allocator
// sits above this one and keeps the statistics (allocated, reserved, peak).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "braid_backend.h"
#include "vk.h"

namespace braid::vk {

// v rounded up to a multiple of a (a > 0): sub-allocations and staging offsets keep their alignment.
constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Device;

struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t size = 0;
  void* mapped = nullptr;             // host-visible blocks only
  uint32_t heap = 0;                  // the memory heap it was allocated from
  uint64_t heap_bytes = 0;            // what it counts against that heap (its allocation size)
  std::map<uint64_t, uint64_t> free;  // offset -> size, coalesced
  uint64_t used = 0;
};

}  // namespace braid::vk

// A buffer handed to the host: a range of one block.
struct braid_backend_buffer_t {
  braid::vk::MemoryBlock* block = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;  // within block->buffer
  uint64_t size = 0;
  bool dedicated = false;
};

namespace braid::vk {

class Allocator {
 public:
  // usage: VkBufferUsageFlags of every block; memory flags wanted (e.g. DEVICE_LOCAL, or HOST_VISIBLE|COHERENT).
  Allocator(Device& device, VkMemoryPropertyFlags want, uint64_t block_size);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Returns BRAID_OK or BRAID_ERR_OUT_OF_MEMORY: when the heap would be over its size (Device's
  // accounting), when the driver refuses, or when the buffer could never be bound to a kernel (larger
  // than maxStorageBufferRange; logged with the reason).
  braid_status allocate(uint64_t bytes, braid_backend_buffer_t** out);
  void free(braid_backend_buffer_t* b);

 private:
  std::unique_ptr<MemoryBlock> create_block(uint64_t size);
  void destroy_block(MemoryBlock& b);

  Device& device_;
  VkMemoryPropertyFlags want_;
  uint64_t block_size_;
  std::mutex mu_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
};

}  // namespace braid::vk
