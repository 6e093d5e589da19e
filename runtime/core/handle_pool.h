// Storage and liveness of the application's long-lived handles: braid_context, braid_dataset and
// braid_batch_iterator (tensor handles have their own per-context TensorPool).
//
// Why this shape. A handle is the object's address, and applications pass stale ones: released once
// too often, or kept after a release. Two things must then hold:
//   1. Checking a handle never reads the object. Validity is membership of the address in a
//      process-wide set of live handles of that kind, kept under a lock: a released handle is simply
//      absent, and no freed (or destroyed) memory is read to find that out. A magic number inside
//      the object, as before, was read from freed memory.
//   2. A stale handle does not name a newer object. With plain new/delete the allocator hands the
//      same address to the next context, so a double release of a stale context destroyed an
//      unrelated new one. Here objects live in slots that are never returned to the allocator, and a
//      freed slot is reused only after kQuarantine later releases of the same kind (first in, first
//      out), the same policy as TensorPool: a stale handle stays detectably dead until that many other
//      handles of its kind have come and gone. These handles are created rarely (a context loads
//      plugins), so that is a long time, and the slots kept cost at most kQuarantine * sizeof(T).
// The pools are process-wide and never destroyed, so a handle released from a static destructor
// after ours would have run still finds its pool.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"

namespace braid {

template <class T>
class HandlePool {
  struct Destroy {
    void operator()(T* p) const noexcept { instance().destroy(p); }
  };

 public:
  // Owns an object in a slot (not yet, or no longer, a live handle); destroys it and frees the slot.
  using Owned = std::unique_ptr<T, Destroy>;
  static constexpr size_t kQuarantine = 1024;

  static HandlePool& instance() {
    // Constructed in static storage on first use and never destroyed (see the top of this file).
    alignas(HandlePool) static std::byte storage[sizeof(HandlePool)];
    static HandlePool* const pool = ::new (storage) HandlePool();
    return *pool;
  }

  // Constructs an object in a slot. It is not a live handle until publish().
  template <class... Args>
  Owned make(Args&&... args) {
    void* slot = take_slot();
    try {
      return Owned(::new (slot) T(std::forward<Args>(args)...));
    } catch (...) {
      free_slot(slot);
      throw;
    }
  }

  // Makes the object a live handle and hands it to the application.
  T* publish(Owned obj) {
    std::unique_lock lock(mu_);
    live_.insert(obj.get());
    return obj.release();
  }

  // Whether p is a live handle of this kind. Never dereferences p.
  bool is_live(const void* p) const {
    std::shared_lock lock(mu_);
    return live_.count(p) != 0;
  }

  // The object behind a handle from the application, or BRAID_ERR_INVALID_ARGUMENT naming `what` and
  // the handle's `kind` ("context") when it is NULL or not live. Never dereferences a dead handle.
  T& checked(T* p, const char* what, const char* kind) const {
    if (p == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
    if (!is_live(p))
      fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a live ", kind, " handle (released, or never one)");
    return *p;
  }

  // checked(), and f(object) under the lock that retire() needs, so the object cannot be retired in
  // between: f takes a reference (false when it can't, as for an object whose last reference is
  // being dropped) and the object is then the caller's to use until it drops that reference.
  template <class F>
  T& checked_retained(T* p, const char* what, const char* kind, F f) const {
    if (p == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
    std::shared_lock lock(mu_);
    if (live_.count(p) == 0 || !f(*p))
      fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a live ", kind, " handle (released, or never one)");
    return *p;
  }

  // Calls f on every live object, under the lock that retire() needs: none can be retired meanwhile.
  // Those for which f returns true are returned (f takes a reference on them).
  template <class F>
  std::vector<T*> select_live(F f) const {
    std::shared_lock lock(mu_);
    std::vector<T*> chosen;
    for (const void* p : live_)
      if (f(*static_cast<T*>(const_cast<void*>(p)))) chosen.push_back(static_cast<T*>(const_cast<void*>(p)));
    return chosen;
  }

  // Takes a live handle out of the set and returns its ownership (empty if it was not live), so that
  // of two racing releases of the same last reference at most one destroys the object.
  Owned retire(T* p) {
    std::unique_lock lock(mu_);
    return Owned(live_.erase(p) != 0 ? p : nullptr);
  }

 private:
  HandlePool() = default;

  struct alignas(T) Slot {
    std::byte bytes[sizeof(T)];
  };

  void* take_slot() {
    std::unique_lock lock(mu_);
    if (free_.size() > kQuarantine) {
      void* s = free_.front();
      free_.pop_front();
      return s;
    }
    return slots_.emplace_back().bytes;
  }

  void free_slot(void* slot) noexcept {
    std::unique_lock lock(mu_);
    try {
      free_.push_back(slot);
    } catch (...) {  // the slot is simply never reused
    }
  }

  void destroy(T* p) noexcept {
    p->~T();
    free_slot(p);
  }

  mutable std::shared_mutex mu_;
  std::deque<Slot> slots_;  // stable addresses, never freed
  std::deque<void*> free_;  // destroyed objects' slots, oldest first
  std::unordered_set<const void*> live_;
};

// The reference counts of a handle kind that libbraid also holds internally (an iterator holds its
// dataset, a hybrid function its graphs, every object its context): `refs` counts every holder,
// `app_refs` the part that is the application's (its create, retains and releases). A release beyond
// the application's own is refused: it would otherwise take the reference an internal holder has
// and free the object under it (issue 31: a second braid_dataset_release freed a dataset its
// iterator still read). The context (context/context.h) keeps the same pair by hand.
struct SharedRefs {
  std::atomic<int32_t> refs{1};
  std::atomic<int32_t> app_refs{1};

  // braid_*_retain: one more application reference. Refused once the application has released all
  // of its own (only internal holders are left: the handle is no longer the application's to use).
  void app_retain(const char* what) {
    int32_t n = app_refs.load();
    do {
      if (n <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, what, " was released by the application (only braid holds it)");
    } while (!app_refs.compare_exchange_weak(n, n + 1));
    refs.fetch_add(1);
  }
  // braid_*_release: takes one application reference away, or fails without changing anything.
  // Returns whether that was the last reference of all (the caller destroys the object).
  [[nodiscard]] bool app_release(const char* what) {
    int32_t n = app_refs.load();
    do {
      if (n <= 0)
        fail(BRAID_ERR_INVALID_ARGUMENT, what,
             " was already released as many times as it was created and retained (braid still holds it)");
    } while (!app_refs.compare_exchange_weak(n, n - 1));
    return refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  // An internal holder's reference (not the application's).
  void hold() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  // Drops an internal holder's reference; returns whether it was the last.
  [[nodiscard]] bool drop() noexcept { return refs.fetch_sub(1, std::memory_order_acq_rel) == 1; }
};

}  // namespace braid
