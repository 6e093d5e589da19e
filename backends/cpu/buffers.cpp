#include "buffers.h"

#include <cstdlib>
#include <limits>
#include <memory>
#include <new>

namespace braid::cpu {
namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

// buffer.h fixes the layout the kernels see (data, size); the owning handle extends it, so freeing is
// a unique_ptr reset rather than a manual free. An imported buffer's storage is empty: its memory is
// someone else's.
struct OwnedBuffer : braid_backend_buffer_t {
  std::unique_ptr<std::byte, FreeDeleter> storage;
};

}  // namespace

braid_status allocate_buffer(uint64_t bytes, braid_backend_buffer* out) noexcept {
  if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  // aligned_alloc wants a multiple of the alignment; round up, keeping 0 bytes a real allocation.
  constexpr uint64_t kMax = std::numeric_limits<size_t>::max() - kBufferAlignment;
  if (bytes > kMax) return BRAID_ERR_OUT_OF_MEMORY;
  uint64_t padded =
      bytes == 0 ? kBufferAlignment : (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  try {
    auto buffer = std::make_unique<OwnedBuffer>();
    buffer->storage.reset(static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, static_cast<size_t>(padded))));
    if (!buffer->storage) return BRAID_ERR_OUT_OF_MEMORY;
    buffer->data = buffer->storage.get();
    buffer->size = bytes;
    *out = buffer.release();
    return BRAID_OK;
  } catch (const std::bad_alloc&) {
    return BRAID_ERR_OUT_OF_MEMORY;
  }
}

braid_status import_buffer(void* data, uint64_t bytes, braid_backend_buffer* out) noexcept {
  if (out == nullptr || (data == nullptr && bytes > 0)) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  try {
    auto buffer = std::make_unique<OwnedBuffer>();
    buffer->data = static_cast<std::byte*>(data);
    buffer->size = bytes;
    *out = buffer.release();
    return BRAID_OK;
  } catch (const std::bad_alloc&) {
    return BRAID_ERR_OUT_OF_MEMORY;
  }
}

void free_buffer(braid_backend_buffer buffer) noexcept {
  // Every buffer handed out is an OwnedBuffer (allocate_buffer and import_buffer are the only sources).
  std::unique_ptr<OwnedBuffer> owned(static_cast<OwnedBuffer*>(buffer));
}

}  // namespace braid::cpu
