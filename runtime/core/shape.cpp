#include "core/shape.h"

#include <limits>

#include "core/error.h"

namespace braid {

Shape Shape::from(int32_t ndim, const int64_t* dims, const char* what) {
  if (ndim < 0 || ndim > BRAID_MAX_DIMS)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": ndim ", ndim, " outside [0, ", BRAID_MAX_DIMS, "]");
  if (ndim > 0 && dims == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": shape is NULL");
  Shape s;
  s.ndim = ndim;
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] < 0) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": negative dimension ", dims[i], " at axis ", i);
    s.dims[static_cast<size_t>(i)] = dims[i];
  }
  if (!s.fits()) fail(BRAID_ERR_OUT_OF_MEMORY, what, ": shape has more elements than int64 can count");
  return s;
}

bool Shape::fits() const noexcept {
  // Zero dimensions are skipped, as NumPy does: an empty tensor's other dimensions still take part in
  // strides and in the products ops form (rows * cols of a matrix), which must not overflow.
  int64_t product = 1;
  for (int i = 0; i < ndim; ++i) {
    const int64_t d = dims[static_cast<size_t>(i)];
    if (d != 0 && __builtin_mul_overflow(product, d, &product)) return false;
  }
  return true;
}

Shape Shape::of(std::span<const int64_t> dims) {
  Shape s;
  s.ndim = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = dims[i];
  return s;
}

int64_t Shape::numel() const noexcept {
  // An empty shape may have huge other dimensions ([0, 2^62, 2^62] is a valid empty tensor): their
  // product is never formed. Otherwise Shape::from has checked that the product fits.
  for (int i = 0; i < ndim; ++i)
    if (dims[static_cast<size_t>(i)] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

std::array<int64_t, BRAID_MAX_DIMS> Shape::contiguous_strides() const noexcept {
  std::array<int64_t, BRAID_MAX_DIMS> strides{};
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = s;
    // Wraps instead of overflowing for an empty shape with huge dimensions, whose strides are never used.
    s = static_cast<int64_t>(static_cast<uint64_t>(s) * static_cast<uint64_t>(dims[static_cast<size_t>(i)]));
  }
  return strides;
}

bool Shape::operator==(const Shape& o) const noexcept {
  if (ndim != o.ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[static_cast<size_t>(i)]);
  }
  return s + "]";
}

int32_t normalize_axis(int64_t axis, int32_t ndim, const char* what) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": axis ", axis, " out of range for ", ndim, "-d tensor");
  return static_cast<int32_t>(a);
}

}  // namespace braid
