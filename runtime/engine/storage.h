// A storage is one allocation on one device, shared by the tensors that view it (reshape), with
// the engine variable that orders the ops touching it. It lives in the engine's layer because the
// engine orders storages; the device and tensor layers above only name it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/node.h"
#include "memory/caching_allocator.h"

namespace braid {

struct Device;  // device/device.h, above: named here, never used

// Storages at least this large that the application releases while ops still use them are offered
// for reuse by the next op output of the same size (Context::new_output_tensor).
inline constexpr uint64_t kRecycleMinBytes = uint64_t{256} << 10;

// Memory a storage does not own (a tensor imported through DLPack): its destructor hands the memory
// back to its owner, where an owned block goes back to the allocator.
struct ForeignMemory {
  virtual ~ForeignMemory() = default;
};

struct Storage : std::enable_shared_from_this<Storage> {
  Device* device;
  CachingAllocator* allocator;  // the device's, which outlives its storages
  Block block;
  uint64_t bytes;  // requested size
  Var var;
  // Tensor handles viewing it (acquire_tensor / release_tensor); in-flight ops hold it without one.
  // Counted only from kRecycleMinBytes up, the storages that can be reused: a tiny op's output costs
  // no atomic operation for it.
  std::atomic<uint32_t> handles{0};
  // Made by a trace that only records (a hybrid function's first call): no memory (block is empty)
  // and never written. Outside that trace, an op or copy given one is refused.
  bool recorded_only = false;
  // Bumped by every write into an existing storage (an in-place kernel, an overwrite, an upload, a
  // copy into it); a new storage starts at 0, and an op's new outputs cost nothing. Autograd saves it
  // with each tensor a gradient reads and refuses a backward that would read a changed value
  // (docs/AUTOGRAD.md). It keeps counting when the storage is reused. A relaxed load and store, not a
  // read-modify-write: two writes to one storage at once from two threads race on its data anyway,
  // and either still changes the count.
  std::atomic<uint32_t> version{0};
  void bump_version() noexcept {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Set for memory the storage does not own (then allocator is NULL and block is not the allocator's);
  // such a storage is never offered for reuse.
  std::unique_ptr<ForeignMemory> foreign;

  Storage(Device* d, CachingAllocator* a, Block b, uint64_t n) : device(d), allocator(a), block(b), bytes(n) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  // Runs when the last tensor and the last in-flight op using it let go: the deferred free.
  ~Storage() {
    if (foreign)
      foreign.reset();
    else
      allocator->free(block);
  }
};

}  // namespace braid
