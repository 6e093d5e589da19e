// Live-handle registry for the parallel layer's handles (braid_kvstore, braid_trainer): a handle is
// dereferenced only after its address is found among the live ones, so a released (or never valid)
// handle gives BRAID_ERR_INVALID_ARGUMENT instead of a read of freed memory, and a stale handle
// whose address was reused cannot outlive its reference count either: release checks the count under
// the registry's lock. These handles are few and their calls coarse, so one mutex is cheap enough.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/error.h"

namespace braid::parallel {

template <class T>
class LiveHandles {
 public:
  T* add(std::unique_ptr<T> object) {
    std::lock_guard lock(mu_);
    T* raw = object.get();
    live_.emplace(raw, std::move(object));
    return raw;
  }
  // A live handle (with refs > 0), or throws.
  T& checked(const T* h, const char* what) {
    if (h == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
    std::lock_guard lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a live handle (released already?)");
    return *it->second;
  }
  void retain(const T* h, const char* what) {
    T& t = checked(h, what);
    t.refs.fetch_add(1);
  }
  // Drops one reference; the last one removes the handle and destroys the object (outside the lock:
  // its destructor releases tensors and the context).
  void release(const T* h, const char* what) {
    if (h == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
    std::unique_ptr<T> dead;
    {
      std::lock_guard lock(mu_);
      auto it = live_.find(h);
      if (it == live_.end()) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a live handle (released already?)");
      if (it->second->refs.fetch_sub(1) == 1) {
        dead = std::move(it->second);
        live_.erase(it);
      }
    }
  }

 private:
  std::mutex mu_;
  std::unordered_map<const T*, std::unique_ptr<T>> live_;
};

}  // namespace braid::parallel
