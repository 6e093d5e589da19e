// Device discovery without assuming a driver: checks for libcuda before the first CUDA runtime call,
// then asks cudart (linked statically) for the devices. The result is computed once and cached.
#pragma once
#include <cstdint>
#include <string>

#include "braid_backend.h"

namespace braid::cuda {

struct Probe {
  int count = 0;
  const char* reason = "";  // static or owned by the cached Probe; stays valid until unload
};

// Thread-safe; never crashes or hangs when there is no driver or GPU.
const Probe& probe();
braid_status fill_props(int index, braid_backend_device_props* out);
// Backend-specific properties as one JSON object (cached; valid until unload), or nullptr.
const char* props_json(int index);

}  // namespace braid::cuda
