// Buffers: 64-byte aligned host memory behind braid_backend_buffer_t (buffer.h).
#pragma once
#include <cstdint>

#include "braid_backend.h"
#include "buffer.h"

namespace braid::cpu {

// Alignment of every buffer: a cache line, and enough for any SIMD load the kernels use.
inline constexpr uint64_t kBufferAlignment = 64;

// 0 bytes gives a valid buffer (size 0, data non-NULL). Never throws.
braid_status allocate_buffer(uint64_t bytes, braid_backend_buffer* out) noexcept;
void free_buffer(braid_backend_buffer buffer) noexcept;
// A buffer over host memory the backend does not own (plugin ABI 1.7 buffer_import_host): free_buffer
// releases the handle only.
braid_status import_buffer(void* data, uint64_t bytes, braid_backend_buffer* out) noexcept;

}  // namespace braid::cpu
