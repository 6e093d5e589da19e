// Entry point from the CPU backend's queue threads into its kernels. Kernels see a validated
// braid_kernel_call (abi/braid_backend.h documents every op's operands and attributes) and run it to
// completion on the calling thread, fanning out over the device's cores through Exec.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "braid_backend.h"
#include "buffer.h"

namespace braid::cpu {

// The cores a kernel may use: the device's oneTBB arena. Kernels never create threads of their own.
class Exec {
 public:
  virtual ~Exec() = default;
  // Calls fn(begin, end) on disjoint chunks covering [0, n), chunks of at least `grain` items, in
  // parallel on the device's cores. Runs inline when n <= grain or concurrency() == 1.
  virtual void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) = 0;
  // Cores this device owns (its arena's concurrency). OpenBLAS itself runs single-threaded (blas.h).
  virtual int concurrency() const = 0;
};

struct KernelResult {
  braid_status status = BRAID_OK;
  std::string message;  // set when status != BRAID_OK
};

// Runs one kernel call. Never throws.
KernelResult run_kernel(const braid_kernel_call& call, Exec& exec);

// Whether run_kernel implements op for dtype (the dtype of the first input, or of the first output
// for creation ops).
bool kernel_supports(braid_kernel_op op, braid_dtype dtype);

// Whether run_kernel implements this whole call (the plugin's supports_call, ABI 1.4): kernel_supports
// for its dtype, and the one list of the elementwise ops that take integers.
bool call_supports(const braid_kernel_call& call) noexcept;

// Address of a view's element 0.
inline std::byte* view_data(const braid_buffer_view& v) { return v.buffer->data + v.byte_offset; }

}  // namespace braid::cpu
