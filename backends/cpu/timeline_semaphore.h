// The CPU plugin's timeline semaphore: exactly the shared host-side one (backends/common/host_semaphore.h).
// Every signal happens on the host (a worker after work_end, or the host API), so nothing is added.
#pragma once
#include "host_semaphore.h"

// The ABI's opaque handle type.
struct braid_backend_semaphore_t : braid::plugin::HostSemaphore {
  using HostSemaphore::HostSemaphore;
};

namespace braid::cpu {
using Semaphore = braid_backend_semaphore_t;
}
