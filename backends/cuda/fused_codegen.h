// Graph mode's fused elementwise kernels (FUSED_ELEMENTWISE, abi/braid_backend.h) on CUDA: the source
// of a program's kernel and its compilation to PTX with NVRTC. kernels/fused.cpp loads and launches
// them. The kernel is `extern "C" __global__ void braid_fused(Args)`, with Args laid out as
// FusedArgs<T> below.
#pragma once
#include <string>

#include "braid_backend.h"
#include "fused_program.h"

namespace braid::cuda {

constexpr int kFusedOperands = BRAID_KERNEL_MAX_INPUTS + 1;  // the inputs, then the output

// The generated kernel's one parameter, passed by value (well under the 4 KiB limit).
template <class T>
struct FusedArgs {
  long long n;
  int nd;
  long long shape[BRAID_MAX_DIMS];
  long long strides[kFusedOperands][BRAID_MAX_DIMS];  // element strides; 0 on broadcast axes
  const T* in[BRAID_KERNEL_MAX_INPUTS];
  T* out;
  T f[8];
};

// The kernel of a program in dtype (float32 or float64).
std::string fused_cuda_source(const plugin::FusedProgram& program, braid_dtype dtype);

// Whether NVRTC could be opened (once; thread-safe).
bool nvrtc_available();

// PTX for `arch` ("compute_90"), or "" with error set (NVRTC missing, or its log).
std::string compile_fused_ptx(const std::string& source, const std::string& arch, std::string& error);

}  // namespace braid::cuda
