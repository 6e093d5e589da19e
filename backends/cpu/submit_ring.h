// The queue's submission ring: a bounded multi-producer, single-consumer FIFO without locks. Each slot
// carries a sequence number that says whose turn it is (a producer's claim or the consumer's read),
// so a tiny op is handed from the submitting thread to the queue thread through the slot's own cache
// lines, with no mutex line bouncing between the two cores. When the ring is full, submit falls back
// to an overflow list under the queue's mutex (queue.cpp), so a producer never blocks on it.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace braid::cpu {

template <typename T, size_t Capacity>
class SubmitRing {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");

 public:
  SubmitRing() : slots_(std::make_unique<Slot[]>(Capacity)) {
    for (size_t i = 0; i < Capacity; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
  }

  // Any thread. Claims the next slot and calls fill(T&) on it to build the item in place, then
  // publishes it; returns false without calling fill when the ring is full. fill must not throw, and
  // whatever it leaves in the slot is published (a failed fill leaves an item that does nothing). The
  // publishing store is sequentially consistent so that a producer's later check of the consumer's
  // "parked" flag cannot be ordered before it (queue.cpp relies on that to never miss a wake-up).
  template <typename Fill>
  bool try_emplace(Fill&& fill) noexcept {
    uint64_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[pos & (Capacity - 1)];
      const uint64_t seq = slot.seq.load(std::memory_order_acquire);
      const auto lag = static_cast<int64_t>(seq - pos);
      if (lag == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          fill(slot.value);
          slot.seq.store(pos + 1);
          return true;
        }
      } else if (lag < 0) {
        return false;  // the consumer has not freed this slot yet: full
      } else {
        pos = tail_.load(std::memory_order_relaxed);  // another producer took it
      }
    }
  }

  // Consumer thread only: whether the next item has been published.
  bool ready() const noexcept { return slots_[head_ & (Capacity - 1)].seq.load() == head_ + 1; }

  // Consumer thread only: whether every slot a producer has claimed has been popped. Not the same as
  // !ready(): the next slot may be claimed and still being filled, with later slots published.
  bool drained() const noexcept { return tail_.load() == head_; }

  // Consumer thread only. Precondition: ready(). Moves the item straight into `out` (returning it by
  // value cost a second move per item, through a temporary).
  void pop(T& out) noexcept {
    Slot& slot = slots_[head_ & (Capacity - 1)];
    out = std::move(slot.value);
    slot.seq.store(head_ + Capacity, std::memory_order_release);
    ++head_;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq;
    T value;
  };
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> tail_{0};  // next position a producer claims
  alignas(64) uint64_t head_ = 0;              // next position the consumer reads
};

}  // namespace braid::cpu
