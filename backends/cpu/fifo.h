// A growable ring buffer: the queue's overflow FIFO, used when its lock-free ring (submit_ring.h) is
// full. Unlike std::deque, which allocates a node per element of a type as large as WorkItem, it
// allocates only when it grows. Not thread-safe (the queue's mutex guards it).
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace braid::cpu {

template <typename T>
class Fifo {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }

  void push(T&& value) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) & (slots_.size() - 1)] = std::move(value);
    ++count_;
  }

  // Precondition: !empty().
  T pop() {
    T value = std::move(slots_[head_]);
    head_ = (head_ + 1) & (slots_.size() - 1);
    --count_;
    return value;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? kInitialSlots : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  static constexpr size_t kInitialSlots = 16;  // a power of two, as every later size
  std::vector<T> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace braid::cpu
