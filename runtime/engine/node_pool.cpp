#include "engine/node_pool.h"

#include <cstdlib>
#include <new>

namespace braid {

NodePool::~NodePool() {
  for (void* p : free_) ::operator delete(p);
}

void* NodePool::allocate(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (slot_bytes_ == 0) slot_bytes_ = bytes;
    if (bytes == slot_bytes_ && !free_.empty()) {
      void* p = free_.back();
      free_.pop_back();
      return p;
    }
  }
  return ::operator new(bytes);
}

void NodePool::deallocate(void* p, size_t bytes) noexcept {
  {
    std::lock_guard lock(mu_);
    if (bytes == slot_bytes_ && free_.size() < free_.capacity()) {
      free_.push_back(p);
      return;
    }
    if (bytes == slot_bytes_ && free_.size() < 4096) {
      try {
        free_.push_back(p);
        return;
      } catch (...) {  // no room to keep it: free it below
      }
    }
  }
  ::operator delete(p);
}

}  // namespace braid
