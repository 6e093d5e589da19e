// One launcher per op family, each in the .cu (or .cpp) file named in its comment.
#pragma once
#include <string>

#include "kernels.h"

namespace braid::cuda::kern {
using Launcher = braid_status (*)(const braid_kernel_call&, KernelEnv&, std::string&);

// elementwise.cu
braid_status fill(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status arange(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status random(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status copy(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status unary(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status binary(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status binary_scalar(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status where(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status dropout(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status sgd(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status sgd_momentum(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status adam(const braid_kernel_call&, KernelEnv&, std::string&);
// Strided copy between two views of one shape (used by matmul for operands cuBLAS cannot take).
braid_status copy_views(const braid_buffer_view& src, const braid_buffer_view& dst, cudaStream_t s, std::string&);
// nn.cu
braid_status reduce(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status argmax(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status conv2d(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status conv2d_bwd_data(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status conv2d_bwd_weight(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status pool2d(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status pool2d_bwd(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status batch_norm(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status batch_norm_bwd(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status softmax(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status softmax_ce(const braid_kernel_call&, KernelEnv&, std::string&);
braid_status softmax_ce_bwd(const braid_kernel_call&, KernelEnv&, std::string&);
// indexing.cu: TAKE and TAKE_BWD
braid_status take(const braid_kernel_call&, KernelEnv&, std::string&);
// matmul.cpp
braid_status matmul(const braid_kernel_call&, KernelEnv&, std::string&);
// fused.cpp
braid_status fused_elementwise(const braid_kernel_call&, KernelEnv&, std::string&);
}  // namespace braid::cuda::kern
