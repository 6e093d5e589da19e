// A vector with a fixed capacity stored inline. Unlike std::array<T, N>, only the elements in use are
// ever constructed or destroyed: an OpNode holds up to 40 shared_ptrs of which a tiny op uses three,
// and constructing, resetting and destroying all 40 costs more per op than the op's kernel.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace braid {

template <typename T, size_t N>
class InlineVector {
 public:
  InlineVector() noexcept {}  // storage left uninitialised on purpose; size_ says what is live
  ~InlineVector() { clear(); }
  InlineVector(const InlineVector&) = delete;
  InlineVector& operator=(const InlineVector&) = delete;

  static constexpr size_t capacity() noexcept { return N; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool full() const noexcept { return size_ == N; }

  // Precondition: !full().
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    T* slot = std::construct_at(data() + size_, std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }

  void clear() noexcept {
    std::destroy_n(data(), size_);
    size_ = 0;
  }

  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }

 private:
  T* data() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* data() const noexcept { return std::launder(reinterpret_cast<const T*>(storage_)); }

  alignas(T) std::byte storage_[N * sizeof(T)];
  size_t size_ = 0;
};

}  // namespace braid
