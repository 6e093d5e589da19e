// A tensor shape of at most BRAID_MAX_DIMS dimensions, held by value (no heap).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "braid.h"

namespace braid {

struct Shape {
  int32_t ndim = 0;
  std::array<int64_t, BRAID_MAX_DIMS> dims{};

  static Shape from(int32_t ndim, const int64_t* dims, const char* what);  // validates
  static Shape of(std::span<const int64_t> dims);                          // trusted
  int64_t numel() const noexcept;
  // Whether the product of the non-zero dimensions fits in int64 (every shape braid holds does).
  bool fits() const noexcept;
  int64_t operator[](int i) const noexcept { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) noexcept { return dims[static_cast<size_t>(i)]; }
  std::span<const int64_t> span() const noexcept { return {dims.data(), static_cast<size_t>(ndim)}; }
  // Row-major element strides.
  std::array<int64_t, BRAID_MAX_DIMS> contiguous_strides() const noexcept;
  bool operator==(const Shape& o) const noexcept;
  std::string str() const;  // "[2, 3]"
};

// Normalises a possibly negative axis; throws BRAID_ERR_INVALID_ARGUMENT when out of range.
int32_t normalize_axis(int64_t axis, int32_t ndim, const char* what);

}  // namespace braid
