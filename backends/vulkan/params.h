// The parameter block every shader reads at binding 0 (shaders/common.glsl declares the same layout;
// std430 arrays of 32-bit scalars have a 4-byte stride, so the two agree field for field).
#pragma once
#include <cstdint>

namespace braid::vk {

constexpr int kMaxOperands = 10;  // inputs 0..5, outputs 6..9

struct Params {
  uint32_t n = 0;     // elements (or work items) to produce
  uint32_t ndim = 0;  // of `shape`
  uint32_t shape[8] = {};
  int32_t off[kMaxOperands] = {};          // element offset of each operand
  int32_t strides[kMaxOperands * 8] = {};  // element strides of each operand over `shape`
  int32_t i[8] = {};
  float f[8] = {};
  uint32_t extra[32] = {};
  uint32_t dattr[16] = {};  // f[0..7] again as doubles, for float64 kernels (Enc::attr)
  uint32_t contig = 0;      // bit op: operand op is row-major contiguous over `shape` (Enc::dispatch)
};

}  // namespace braid::vk
