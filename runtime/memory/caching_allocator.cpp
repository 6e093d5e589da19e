#include "memory/caching_allocator.h"

#include <algorithm>
#include <memory>

#include "core/error.h"

namespace braid {
namespace {
constexpr uint64_t kAlignment = 512;          // every block starts 512-byte aligned
constexpr uint64_t kSmallLimit = 1ull << 20;  // requests up to 1 MiB share 2 MiB segments
constexpr uint64_t kSmallSegment = 2ull << 20;
constexpr uint64_t kLargeRounding = 2ull << 20;  // large segments are whole 2 MiB units
constexpr uint64_t kSplitRemainder = 512;        // smaller leftovers stay attached to the block

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
}  // namespace

// A segment is one backend buffer. Its ranges (offset -> size, used flag) tile it exactly, so a freed
// range can find and merge with its neighbours.
struct Segment {
  braid_backend_buffer buffer;
  uint64_t size;
  std::map<uint64_t, std::pair<uint64_t, bool>> ranges;  // offset -> (size, used)
  std::map<uint64_t, uint64_t> free_serial;              // offset -> serial of its free_ key
  size_t used_count = 0;
  bool small = false;
};

CachingAllocator::FreeMap& CachingAllocator::pool_of(const Segment* seg) noexcept {
  return seg->small ? free_small_ : free_large_;
}

CachingAllocator::CachingAllocator(BackendAlloc alloc, BackendFree free, Drain drain)
    : backend_alloc_(std::move(alloc)),
      backend_free_(std::move(free)),
      drain_(std::move(drain)),
      recent_(kSmallLimit / kAlignment + 1) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mu_);
  take_returned_locked();  // returns the nodes to their pool
  for (auto& seg : segments_) backend_free_(seg->buffer);
}

bool CachingAllocator::take_returned_locked(uint64_t want, Block* hit) noexcept {
  ReturnedBlock* r = returned_.exchange(nullptr, std::memory_order_acquire);
  bool found = false;
  // Newest first: the newest block of the wanted size is the likeliest to be in cache, and the
  // common case (an op loop freeing each output before it allocates the next) is the top one.
  if (r && want != 0 && r->block.size == want) {
    *hit = r->block;
    found = true;
    ReturnedBlock* next = r->next;
    std::destroy_at(r);
    returned_nodes_.deallocate(r, sizeof(ReturnedBlock));
    r = next;
  }
  // The rest in reverse, so the most recently freed block ends on top of its size's LIFO.
  ReturnedBlock* oldest_first = nullptr;
  while (r) {
    ReturnedBlock* next = r->next;
    r->next = oldest_first;
    oldest_first = r;
    r = next;
  }
  while (oldest_first) {
    ReturnedBlock* next = oldest_first->next;
    const Block block = oldest_first->block;
    std::destroy_at(oldest_first);
    returned_nodes_.deallocate(oldest_first, sizeof(ReturnedBlock));
    stats_.allocated -= block.size;
    remember_recent_locked(block);
    oldest_first = next;
  }
  return found;
}

void CachingAllocator::remember_recent_locked(const Block& block) noexcept {
  if (block.size > kSmallLimit || block.size % kAlignment != 0) {  // only small blocks come here; be safe
    release_block_locked(block);
    return;
  }
  try {
    recent_[block.size / kAlignment].push_back(block);
    ++recent_count_;
  } catch (...) {  // no room to remember it: return it to the pool
    release_block_locked(block);
  }
}

bool CachingAllocator::try_allocate(uint64_t bytes, Block* out) {
  const bool small = bytes <= kSmallLimit;
  FreeMap& pool = small ? free_small_ : free_large_;
  auto it = pool.lower_bound(FreeKey{bytes, UINT64_MAX});  // the newest block of the smallest fitting size
  Segment* seg = nullptr;
  uint64_t offset = 0;
  if (it != pool.end()) {
    seg = it->second.first;
    offset = it->second.second;
    pool.erase(it);
    seg->free_serial.erase(offset);
  } else {
    uint64_t seg_size = small ? kSmallSegment : round_up(bytes, kLargeRounding);
    braid_backend_buffer buffer = nullptr;
    if (backend_alloc_(seg_size, &buffer) != BRAID_OK || buffer == nullptr) return false;
    auto owned = std::make_unique<Segment>();
    owned->buffer = buffer;
    owned->size = seg_size;
    owned->small = small;
    owned->ranges[0] = {seg_size, false};
    seg = owned.get();
    segments_.insert(std::move(owned));
    stats_.reserved += seg_size;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
    ++stats_.backend_alloc_count;
  }
  auto& range = seg->ranges[offset];
  uint64_t have = range.first;
  if (have - bytes >= kSplitRemainder) {
    range.first = bytes;
    uint64_t rest = offset + bytes;
    seg->ranges[rest] = {have - bytes, false};
    uint64_t serial = ++serial_;
    pool[FreeKey{have - bytes, serial}] = {seg, rest};
    seg->free_serial[rest] = serial;
  }
  range.second = true;
  ++seg->used_count;
  *out = Block{seg->buffer, offset, range.first, seg};
  stats_.allocated += range.first;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.alloc_count;
  return true;
}

Block CachingAllocator::allocate(uint64_t bytes) {
  bytes = round_up(std::max<uint64_t>(bytes, 1), kAlignment);
  Block block;
  {
    std::lock_guard lock(mu_);
    if (take_returned_locked(bytes <= kSmallLimit ? bytes : 0, &block)) {
      ++stats_.alloc_count;  // still counted as allocated: it was never subtracted
      return block;
    }
    if (bytes <= kSmallLimit) {
      if (auto& blocks = recent_[bytes / kAlignment]; !blocks.empty()) {
        block = blocks.back();
        blocks.pop_back();
        --recent_count_;
        stats_.allocated += block.size;
        stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
        ++stats_.alloc_count;
        return block;
      }
    }
    if (try_allocate(bytes, &block)) return block;
  }
  // Out of memory: let pending frees land, give cached segments back, and try once more.
  if (drain_) drain_();
  std::lock_guard lock(mu_);
  take_returned_locked();
  flush_recent_locked();
  release_free_segments_locked();
  if (try_allocate(bytes, &block)) return block;
  fail(BRAID_ERR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes (", stats_.allocated, " allocated, ",
       stats_.reserved, " reserved)");
}

void CachingAllocator::free(const Block& block) noexcept {
  if (!block) return;
  if (block.size <= kSmallLimit && block.segment->small) {
    void* mem = nullptr;
    try {
      mem = returned_nodes_.allocate(sizeof(ReturnedBlock));
    } catch (...) {  // no memory for the node: take the locked path below
    }
    if (mem) {
      ReturnedBlock* r = std::construct_at(static_cast<ReturnedBlock*>(mem), ReturnedBlock{block, nullptr});
      r->next = returned_.load(std::memory_order_relaxed);
      while (!returned_.compare_exchange_weak(r->next, r, std::memory_order_release, std::memory_order_relaxed)) {}
      return;
    }
  }
  std::lock_guard lock(mu_);
  stats_.allocated -= block.size;
  release_block_locked(block);
}

void CachingAllocator::flush_recent_locked() noexcept {
  if (recent_count_ == 0) return;
  for (auto& blocks : recent_) {
    for (const Block& b : blocks) release_block_locked(b);
    blocks.clear();
  }
  recent_count_ = 0;
}

void CachingAllocator::release_block_locked(const Block& block) noexcept {
  Segment* seg = block.segment;
  auto it = seg->ranges.find(block.offset);
  if (it == seg->ranges.end() || !it->second.second) return;  // not ours or double free: ignore
  it->second.second = false;
  --seg->used_count;
  // Merge with the free neighbours on both sides.
  auto remove_free = [&](uint64_t off, uint64_t size) {
    auto s = seg->free_serial.find(off);
    if (s != seg->free_serial.end()) {
      pool_of(seg).erase(FreeKey{size, s->second});
      seg->free_serial.erase(s);
    }
  };
  auto next = std::next(it);
  if (next != seg->ranges.end() && !next->second.second) {
    remove_free(next->first, next->second.first);
    it->second.first += next->second.first;
    seg->ranges.erase(next);
  }
  if (it != seg->ranges.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.second) {
      remove_free(prev->first, prev->second.first);
      prev->second.first += it->second.first;
      seg->ranges.erase(it);
      it = prev;
    }
  }
  uint64_t serial = ++serial_;
  pool_of(seg)[FreeKey{it->second.first, serial}] = {seg, it->first};
  seg->free_serial[it->first] = serial;
}

void CachingAllocator::release_free_segments_locked() noexcept {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment* seg = it->get();
    if (seg->used_count != 0) {
      ++it;
      continue;
    }
    // An unused segment is a single free range.
    for (auto& [off, serial] : seg->free_serial) pool_of(seg).erase(FreeKey{seg->ranges[off].first, serial});
    backend_free_(seg->buffer);
    stats_.reserved -= seg->size;
    it = segments_.erase(it);
  }
}

void CachingAllocator::empty_cache() noexcept {
  std::lock_guard lock(mu_);
  take_returned_locked();
  flush_recent_locked();
  release_free_segments_locked();
}

void CachingAllocator::reset_peak() noexcept {
  std::lock_guard lock(mu_);
  take_returned_locked();
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

MemoryStats CachingAllocator::stats() noexcept {
  std::lock_guard lock(mu_);
  take_returned_locked();
  return stats_;
}

}  // namespace braid
