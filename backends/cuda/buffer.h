// A device allocation as the host sees it: the kernels and copies read ptr; device says whose memory.
#pragma once
#include <cstdint>

#include "braid_backend.h"

struct braid_backend_buffer_t {
  void* ptr = nullptr;  // device pointer (unified addressing: unique across devices)
  uint64_t size = 0;    // bytes
  int device = 0;       // CUDA ordinal
};
