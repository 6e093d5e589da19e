// Per-device caching allocator (docs/ARCHITECTURE.md#memory). Tensors get blocks carved out of larger
// segments obtained from the backend; freed blocks go back to a size-ordered cache and are merged with
// free neighbours, so steady-state training allocates nothing from the backend. Thread-safe.
//
// Tensors are mostly allocated on the pushing thread and freed on a backend thread (an op's last
// reference to its output ends with the op). Small frees therefore go onto a lock-free stack that the
// next allocation (or statistics call) takes whole under the lock, so the freeing thread never takes
// the allocator's mutex or touches its maps: one cache line changes hands per free instead of the
// mutex and the cache's buckets moving between the cores twice per op.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "braid_backend.h"
#include "core/mutex.h"
#include "memory/slot_pool.h"

namespace braid {

struct Segment;

// A block handed to a tensor: a byte range of one backend buffer.
struct Block {
  braid_backend_buffer buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  Segment* segment = nullptr;
  explicit operator bool() const noexcept { return buffer != nullptr; }
};

struct MemoryStats {
  uint64_t allocated = 0, reserved = 0, peak_allocated = 0, peak_reserved = 0;
  uint64_t alloc_count = 0, backend_alloc_count = 0;
};

class CachingAllocator {
 public:
  using BackendAlloc = std::function<braid_status(uint64_t, braid_backend_buffer*)>;
  using BackendFree = std::function<void(braid_backend_buffer)>;
  // Called once before giving up on an allocation: waits for in-flight work so that deferred frees
  // land in the cache.
  using Drain = std::function<void()>;

  CachingAllocator(BackendAlloc alloc, BackendFree free, Drain drain);
  ~CachingAllocator();  // returns every segment to the backend
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws braid::Error(BRAID_ERR_OUT_OF_MEMORY) after draining and trimming the cache.
  Block allocate(uint64_t bytes);
  void free(const Block& block) noexcept;
  void empty_cache() noexcept;
  void reset_peak() noexcept;
  MemoryStats stats() noexcept;  // takes pending frees first, so it counts them

 private:
  struct FreeKey {
    uint64_t size;
    uint64_t serial;  // order of freeing: among equal sizes the newest comes first
    // Best fit by size; among equal sizes the most recently freed block, which is the likeliest to
    // still be in cache (a loop that drops its output and allocates the next one gets it back hot).
    bool operator<(const FreeKey& o) const noexcept { return size != o.size ? size < o.size : serial > o.serial; }
  };
  struct Span;  // a free or used range inside a segment

  struct ReturnedBlock {
    Block block;
    ReturnedBlock* next;
  };

  bool try_allocate(uint64_t bytes, Block* out);
  // Moves the small blocks freed since the last call into recent_ (and out of the statistics), except
  // that when the newest of them has `want` bytes it is put in *hit instead, and true returned.
  bool take_returned_locked(uint64_t want = 0, Block* hit = nullptr) noexcept;
  void remember_recent_locked(const Block& block) noexcept;
  void release_block_locked(const Block& block) noexcept;
  void flush_recent_locked() noexcept;
  void release_free_segments_locked() noexcept;

  BackendAlloc backend_alloc_;
  BackendFree backend_free_;
  Drain drain_;
  mutable Mutex mu_;  // taken once per allocation on the push path (core/mutex.h)
  std::set<std::unique_ptr<Segment>, std::less<>> segments_;
  using FreeMap = std::map<FreeKey, std::pair<Segment*, uint64_t>>;  // size -> (segment, offset)
  FreeMap& pool_of(const Segment* seg) noexcept;
  // Small requests are served from 2 MiB segments shared among them, large ones from their own
  // segments, so a stream of small tensors never fragments the big blocks.
  FreeMap free_small_, free_large_;
  // Small blocks freed recently, by exact size, kept whole: a training step or an op loop asks for
  // the same sizes again, and reusing one costs an index instead of split/merge tree updates.
  // They count as free in the statistics; empty_cache and out-of-memory return them to the pools.
  // Indexed by size / 512 (small sizes are multiples of 512 up to 1 MiB): an index, not a hash
  // lookup, on every allocation of a tiny op.
  std::vector<std::vector<Block>> recent_;
  size_t recent_count_ = 0;  // blocks in recent_
  uint64_t serial_ = 0;
  MemoryStats stats_;
  // Small frees not yet taken (newest first). Nodes come from returned_nodes_, whose own free path is
  // lock-free too: the freeing thread allocates them, the taking thread returns them.
  // On its own cache line: the freeing thread writes it on every free, the allocating thread the
  // statistics and maps around it on every allocation.
  alignas(64) std::atomic<ReturnedBlock*> returned_{nullptr};
  alignas(64) SlotPool returned_nodes_;
};

}  // namespace braid
