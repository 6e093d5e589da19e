// Recycles fixed-size host objects that are made on pushing threads and die on backend threads: op
// nodes (~2.5 KB with their shared_ptr control block, too big for malloc's per-thread caches) and
// storages. malloc's free of another thread's block takes its slow path, once per tiny op. All slots
// of a pool are one size (the first allocation's); other sizes fall through to operator new.
//
// Frees come from backend threads and allocations from pushing threads. Freed slots go onto a
// lock-free stack (push only, so no ABA), which an allocating thread takes whole in one exchange: the
// backend thread never touches a lock or a cache line the pusher holds, beyond the stack's head.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "core/spin_lock.h"

namespace braid {

class SlotPool {
 public:
  SlotPool() = default;
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;
  ~SlotPool();

  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes) noexcept;

 private:
  struct Slot {
    Slot* next;
  };
  static void free_list(Slot* s) noexcept;

  // Each side on its own cache line: returned_ is written by the freeing (backend) threads on every
  // free, mu_ and taken_ by the allocating (pushing) threads on every allocation; sharing one line
  // made every op move it between the cores twice more.
  std::atomic<size_t> slot_bytes_{0};
  alignas(64) std::atomic<Slot*> returned_{nullptr};  // freed by any thread
  alignas(64) SpinLock mu_;                           // guards taken_ (several pushing threads)
  Slot* taken_ = nullptr;                             // ready for allocation
};

// The allocator std::allocate_shared uses to put a node and its control block in a pool slot.
template <class T>
struct PoolAllocator {
  using value_type = T;
  SlotPool* pool;
  explicit PoolAllocator(SlotPool* p) noexcept : pool(p) {}
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
