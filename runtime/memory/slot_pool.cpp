#include "memory/slot_pool.h"

#include <algorithm>
#include <new>

namespace braid {

void SlotPool::free_list(Slot* s) noexcept {
  while (s) {
    Slot* next = s->next;
    ::operator delete(static_cast<void*>(s));
    s = next;
  }
}

SlotPool::~SlotPool() {
  free_list(taken_);
  free_list(returned_.load());
}

void* SlotPool::allocate(size_t bytes) {
  // The size is fixed by the first allocation; after that a plain load suffices (a compare-exchange
  // on every call was one more locked instruction per op on the push path).
  // A failed exchange leaves the size another thread fixed first in `size`.
  size_t size = slot_bytes_.load(std::memory_order_relaxed);
  if (size == 0 && slot_bytes_.compare_exchange_strong(size, bytes)) size = bytes;
  if (size != bytes) return ::operator new(bytes);
  {
    std::lock_guard lock(mu_);
    if (!taken_) taken_ = returned_.exchange(nullptr, std::memory_order_acquire);
    if (Slot* s = taken_) {
      taken_ = s->next;
      return s;
    }
  }
  return ::operator new(std::max(bytes, sizeof(Slot)));
}

void SlotPool::deallocate(void* p, size_t bytes) noexcept {
  if (bytes != slot_bytes_.load(std::memory_order_relaxed)) {
    ::operator delete(p);
    return;
  }
  // The pool keeps every slot it was given: their number is bounded by the ops in flight at once.
  Slot* s = static_cast<Slot*>(p);
  s->next = returned_.load(std::memory_order_relaxed);
  while (!returned_.compare_exchange_weak(s->next, s, std::memory_order_release, std::memory_order_relaxed)) {}
}

}  // namespace braid
