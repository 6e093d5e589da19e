// float -> integer as every backend converts (COPY/cast): truncation toward zero that saturates at the
// target's bounds, NaN -> 0, so that no conversion is undefined. Shared by host code and CUDA device
// code, so the CPU and CUDA backends cannot drift apart; the Vulkan shaders do the same in GLSL.
#pragma once
#include <limits>

#if defined(__CUDACC__)
#define BRAID_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define BRAID_HOST_DEVICE inline
#endif

namespace braid::plugin {

template <class To, class From>
BRAID_HOST_DEVICE To float_to_int(From x) {
  // The bounds are exactly representable powers of two: 2^31, 2^63, 256.
  constexpr From hi = From(std::numeric_limits<To>::max()) + From(1);
  constexpr From lo = From(std::numeric_limits<To>::min());
  if (!(x == x)) return To(0);
  if (x >= hi) return std::numeric_limits<To>::max();
  if (x <= lo) return std::numeric_limits<To>::min();
  return To(x);
}

}  // namespace braid::plugin
