// Copies for one queue: device<->device (same device, or peer), host<->device directly from pinned
// host memory, or through the queue's two pinned staging buffers in chunks (double-buffered: the CPU
// fills one buffer while the copy engine drains the other).
#pragma once
#include <string>

#include "braid_backend.h"

struct braid_backend_queue_t;

namespace braid::cuda {
braid_status run_copy(braid_backend_queue_t& q, const braid_copy_desc& d, std::string& message);
}
