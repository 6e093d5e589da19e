// Tensors to and from host memory: what braid_tensor_from_host, _to_host, _write_host and
// _wait_to_read do, as C++ entry points for the layers above (checkpoints, the Trainer's states, the
// KVStore's servers), which never call back through the C API.
#pragma once
#include <cstddef>

#include "braid.h"
#include "context/context.h"
#include "core/shape.h"
#include "tensor/tensor.h"

namespace braid {

// A new tensor on dev holding `data` (shape's elements of dtype).
TensorRef tensor_from_host(Context& ctx, Device& dev, braid_dtype dtype, const Shape& shape, const void* data);
// Waits for x's writers, then copies its value (bytes == x.bytes()) into data.
void copy_to_host(Tensor& x, void* data, size_t bytes);
// Pushes an upload of host bytes (bytes == t.bytes(), copied first) that overwrites t, ordered after
// earlier ops on t.
void push_upload(Tensor& t, const void* data, size_t bytes);
// Waits until s may be read (its writers have ended), or throws their error; `what` names the wait
// in the profile.
void wait_readable(Context& ctx, Storage& s, const char* what);

}  // namespace braid
