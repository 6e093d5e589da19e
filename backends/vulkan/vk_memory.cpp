#include "vk_memory.h"

#include <algorithm>
#include <string>

#include "device.h"
#include "host.h"

namespace braid::vk {
namespace {
// Every sub-allocation starts on this boundary: at least any device's minStorageBufferOffsetAlignment
// (<= 256 by the spec), so a tensor's start can be bound as a storage buffer directly.
constexpr uint64_t kAlign = 256;
}  // namespace

Allocator::Allocator(Device& device, VkMemoryPropertyFlags want, uint64_t block_size)
    : device_(device), want_(want), block_size_(block_size) {}

Allocator::~Allocator() {
  for (auto& b : blocks_) destroy_block(*b);
}

std::unique_ptr<MemoryBlock> Allocator::create_block(uint64_t size) {
  const Vk& vk = device_.vk();
  auto b = std::make_unique<MemoryBlock>();
  b->size = size;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  const uint32_t families[2] = {device_.compute_family(), device_.transfer_family()};
  if (families[0] != families[1]) {
    bi.sharingMode = VK_SHARING_MODE_CONCURRENT;  // both queues use every buffer: no ownership transfers
    bi.queueFamilyIndexCount = 2;
    bi.pQueueFamilyIndices = families;
  }
  if (vk.vkCreateBuffer(device_.handle(), &bi, nullptr, &b->buffer) != VK_SUCCESS) return nullptr;
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(device_.handle(), b->buffer, &req);
  int type = device_.memory_type(req.memoryTypeBits, want_);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  // Counted against the heap before the driver is asked: some drivers (lavapipe, whose heaps are host
  // memory) grant allocations far beyond the heap they report and fail only when the system runs out.
  const bool counted =
      type >= 0 && device_.reserve_heap(device_.physical().memory.memoryTypes[type].heapIndex, req.size);
  if (!counted || vk.vkAllocateMemory(device_.handle(), &ai, nullptr, &b->memory) != VK_SUCCESS) {
    if (counted) device_.release_heap(device_.physical().memory.memoryTypes[type].heapIndex, req.size);
    vk.vkDestroyBuffer(device_.handle(), b->buffer, nullptr);
    return nullptr;
  }
  b->heap = device_.physical().memory.memoryTypes[type].heapIndex;
  b->heap_bytes = req.size;
  vk.vkBindBufferMemory(device_.handle(), b->buffer, b->memory, 0);
  if (want_ & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    if (vk.vkMapMemory(device_.handle(), b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped) != VK_SUCCESS) {
      destroy_block(*b);
      return nullptr;
    }
  }
  b->free[0] = size;
  return b;
}

void Allocator::destroy_block(MemoryBlock& b) {
  const Vk& vk = device_.vk();
  if (b.buffer) vk.vkDestroyBuffer(device_.handle(), b.buffer, nullptr);
  if (b.memory) {
    vk.vkFreeMemory(device_.handle(), b.memory, nullptr);  // unmaps too
    device_.release_heap(b.heap, b.heap_bytes);
  }
  b.buffer = VK_NULL_HANDLE;
  b.memory = VK_NULL_HANDLE;
}

braid_status Allocator::allocate(uint64_t bytes, braid_backend_buffer_t** out) {
  const uint64_t need = round_up(std::max<uint64_t>(bytes, 1), kAlign);
  auto buf = std::make_unique<braid_backend_buffer_t>();
  buf->size = bytes;
  // Every kernel binds a tensor as one storage buffer: a buffer beyond the device's range could be
  // created but never used, and would fail only when its first kernel runs.
  if (const uint64_t range = device_.physical().props.limits.maxStorageBufferRange; bytes > range) {
    host::log(BRAID_LOG_WARNING, "vulkan: refused a buffer of " + std::to_string(bytes) +
                                     " bytes: kernels can bind at most maxStorageBufferRange = " +
                                     std::to_string(range) + " bytes per tensor on this device");
    return BRAID_ERR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(mu_);
  if (need > block_size_ / 2) {
    auto b = create_block(need);
    if (!b) return BRAID_ERR_OUT_OF_MEMORY;
    b->free.clear();
    b->used = need;
    buf->block = b.get();
    buf->buffer = b->buffer;
    buf->dedicated = true;
    blocks_.push_back(std::move(b));
    *out = buf.release();
    return BRAID_OK;
  }
  auto take = [&](MemoryBlock& b) {
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < need) continue;
      uint64_t off = it->first, size = it->second;
      b.free.erase(it);
      if (size > need) b.free[off + need] = size - need;
      b.used += need;
      buf->block = &b;
      buf->buffer = b.buffer;
      buf->offset = off;
      return true;
    }
    return false;
  };
  for (auto& b : blocks_)
    if (!b->free.empty() && take(*b)) {
      *out = buf.release();
      return BRAID_OK;
    }
  auto b = create_block(block_size_);
  if (!b) return BRAID_ERR_OUT_OF_MEMORY;
  take(*b);
  blocks_.push_back(std::move(b));
  *out = buf.release();
  return BRAID_OK;
}

void Allocator::free(braid_backend_buffer_t* raw) {
  std::unique_ptr<braid_backend_buffer_t> buf(raw);
  if (!buf) return;
  std::lock_guard lock(mu_);
  MemoryBlock* b = buf->block;
  const uint64_t need = round_up(std::max<uint64_t>(buf->size, 1), kAlign);
  b->used -= std::min(b->used, need);
  if (!buf->dedicated) {
    auto [it, ok] = b->free.emplace(buf->offset, need);
    auto next = std::next(it);
    if (next != b->free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      b->free.erase(next);
    }
    if (it != b->free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        b->free.erase(it);
      }
    }
  }
  // An empty block goes back to the driver, except the last remaining one (kept for the next tensor).
  if (b->used == 0 && (buf->dedicated || blocks_.size() > 1)) {
    auto pos = std::find_if(blocks_.begin(), blocks_.end(), [b](const auto& p) { return p.get() == b; });
    destroy_block(*b);
    blocks_.erase(pos);
  }
}

}  // namespace braid::vk
