// Kernel encoders: each turns one braid_kernel_call into dispatches of the shaders in shaders/.
#pragma once
#include <string>

#include "braid_backend.h"
#include "queue.h"

namespace braid::vk {

struct KernelResult {
  braid_status status = BRAID_OK;
  std::string message;
};

// Records the kernel into the queue's open batch (called with the queue's lock held).
KernelResult encode_kernel(const braid_kernel_call& call, Recorder& r);
// Whether an encoder exists for op with this (first input or output) dtype.
bool kernel_supports(braid_kernel_op op, braid_dtype dtype);
// Whether an encoder exists for this whole call (the plugin's supports_call, ABI 1.4): kernel_supports
// for its dtype, and the one list of the elementwise ops that take integers.
bool call_supports(const braid_kernel_call& call) noexcept;

}  // namespace braid::vk
