// Tensors to and from safetensors files as C++ entry points: what the C functions of the checkpoint
// section do (docs/CHECKPOINTS.md), for the layers above (the Trainer's optimizer states) too.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "context/context.h"
#include "tensor/tensor.h"

namespace braid::checkpoint {

// Writes the tensors under their names, atomically (a temporary beside path, fsync, rename), after
// waiting for their writers.
void save_tensors(const char* path, std::span<const std::string> names, std::span<Tensor* const> tensors);
// The names of a file's tensors, in the file's order.
std::vector<std::string> tensor_names(const char* path);
// The named tensors, on device: all of them, or an error (BRAID_ERR_NOT_FOUND for a missing name,
// BRAID_ERR_IO for a damaged file).
std::vector<TensorRef> load_tensors(Context& ctx, Device& device, const char* path, std::span<const std::string> names);

}  // namespace braid::checkpoint
