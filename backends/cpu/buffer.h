// The CPU backend's buffer: plain, 64-byte aligned host memory.
#pragma once
#include <cstddef>
#include <cstdint>

struct braid_backend_buffer_t {
  std::byte* data;
  uint64_t size;
};
