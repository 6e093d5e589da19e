// Recycles the memory of op nodes. A node (with its shared_ptr control block) is ~2.5 KB: too big for
// malloc's per-thread caches, and it is usually freed on a backend thread, so plain malloc costs a
// slow path on every tiny op. All slots are one size; the pool keeps what it hands back.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace braid {

class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool();

  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes) noexcept;

 private:
  std::mutex mu_;
  size_t slot_bytes_ = 0;
  std::vector<void*> free_;
};

// The allocator std::allocate_shared uses to put a node and its control block in a pool slot.
template <class T>
struct PoolAllocator {
  using value_type = T;
  NodePool* pool;
  explicit PoolAllocator(NodePool* p) noexcept : pool(p) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& o) noexcept : pool(o.pool) {}
  T* allocate(size_t n) { return static_cast<T*>(pool->allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool->deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>& o) const noexcept {
    return pool == o.pool;
  }
};

}  // namespace braid
