// The kernels' entry points: what the backend implements (kernel_supports) and the launcher that turns
// one braid_kernel_call into launches on a stream. Kernels never synchronise: a bad input that can
// only be seen on the device (a label out of range, an integer division by zero) sets *error_flag,
// which the completion thread reads once the work has finished.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "braid_backend.h"
#include "cublas_lib.h"
#include "kernel_call.h"

struct braid_backend_device_t;

namespace braid::cuda {

// Codes a kernel writes to its error flag.
enum KernelError : int { kErrNone = 0, kErrLabel = 1, kErrIntDivZero = 2, kErrIntPowZero = 3, kErrIndex = 4 };
const char* kernel_error_text(int code);

struct KernelEnv {
  cudaStream_t stream = nullptr;
  braid_backend_device_t* device = nullptr;
  const CublasLib* blas = nullptr;
  cublasHandle_t blas_handle = nullptr;
  const char* blas_why = "";
  int* error_flag = nullptr;  // device-visible; nullptr unless needs_error_flag(call)
};

bool kernel_supports(braid_kernel_op op, braid_dtype dtype);
// Whether launch_kernel implements this whole call (the plugin's supports_call, ABI 1.4):
// kernel_supports for its dtype, and the one list of the elementwise ops that take integers.
bool call_supports(const braid_kernel_call& call) noexcept;
bool needs_error_flag(const braid_kernel_call& call);
// Enqueues the call. Returns a failure (with message) only for what is known at launch time.
braid_status launch_kernel(const braid_kernel_call& call, KernelEnv& env, std::string& message);

}  // namespace braid::cuda
