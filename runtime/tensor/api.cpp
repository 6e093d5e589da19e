// The C ABI of tensors: creation from host data, queries, waits and host copies.
#include <cstring>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "tensor/handle_watch.h"
#include "tensor/host_copy.h"
#include "tensor/recorder.h"
#include "tensor/tensor.h"

using namespace braid;

namespace {

void check_bytes(const Tensor& t, size_t bytes, const char* what) {
  if (bytes != t.bytes())
    fail(BRAID_ERR_INVALID_ARGUMENT, what, " is ", bytes, " bytes but the tensor of shape ", t.shape.str(),
         " and dtype ", dtype_name(t.dtype), " holds ", t.bytes());
}

// t's whole value was replaced by one autograd did not record: it has no history from now on
// (tensor/recorder.h).
void forget_history(Tensor& t) {
  if (const OpRecorder* r = t.ctx->recording.recorder()) r->overwritten(*t.ctx, t);
}

}  // namespace

extern "C" {

BRAID_API braid_status braid_tensor_empty(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                          const int64_t* shape, braid_tensor* out) {
  return guard("braid_tensor_empty", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    check_dtype(dtype, "dtype");
    Shape s = Shape::from(ndim, shape, "shape");
    Device& d = c.device(device, "device");
    *out = new_tensor(c, d, dtype, s).release();
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_empty(braid_context, braid_device, braid_dtype, int32_t, const int64_t*, braid_tensor*)
    __attribute__((alias("braid_tensor_empty")));

BRAID_API braid_status braid_tensor_from_host(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                              const int64_t* shape, const void* data, size_t bytes, braid_tensor* out) {
  return guard("braid_tensor_from_host", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    check_dtype(dtype, "dtype");
    Shape s = Shape::from(ndim, shape, "shape");
    Device& d = c.device(device, "device");
    uint64_t need = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(s.numel()), dtype_size(dtype), &need))
      fail(BRAID_ERR_INVALID_ARGUMENT, "shape ", s.str(), " of ", dtype_name(dtype), " has more bytes than 2^64");
    if (bytes != need)
      fail(BRAID_ERR_INVALID_ARGUMENT, "data is ", bytes, " bytes but shape ", s.str(), " of ", dtype_name(dtype),
           " needs ", need);
    if (need > 0) require(data, "data");
    *out = tensor_from_host(c, d, dtype, s, data).release();
  });
}

BRAID_API braid_status braid_tensor_retain(braid_tensor t) {
  return guard("braid_tensor_retain", [&] { retain_app_reference(checked_tensor(t, "t")); });
}

BRAID_API braid_status braid_tensor_release(braid_tensor t) {
  return guard("braid_tensor_release", [&] { release_app_reference(checked_tensor(t, "t")); });
}

BRAID_API braid_status braid_tensor_ndim(braid_tensor t, int32_t* out) {
  return guard("braid_tensor_ndim", [&] {
    Tensor& x = checked_tensor(t, "t");
    require(out, "out");
    *out = x.shape.ndim;
  });
}

BRAID_API braid_status braid_tensor_shape(braid_tensor t, int64_t* shape) {
  return guard("braid_tensor_shape", [&] {
    Tensor& x = checked_tensor(t, "t");
    require(shape, "shape");
    for (int i = 0; i < x.shape.ndim; ++i) shape[i] = x.shape[i];
  });
}

BRAID_API braid_status braid_tensor_dtype(braid_tensor t, braid_dtype* out) {
  return guard("braid_tensor_dtype", [&] {
    Tensor& x = checked_tensor(t, "t");
    require(out, "out");
    *out = x.dtype;
  });
}

BRAID_API braid_status braid_tensor_device(braid_tensor t, braid_device* out) {
  return guard("braid_tensor_device", [&] {
    Tensor& x = checked_tensor(t, "t");
    require(out, "out");
    *out = x.device().index;
  });
}

BRAID_API braid_status braid_tensor_numel(braid_tensor t, int64_t* out) {
  return guard("braid_tensor_numel", [&] {
    Tensor& x = checked_tensor(t, "t");
    require(out, "out");
    *out = x.shape.numel();
  });
}

BRAID_API braid_status braid_tensor_wait_to_read(braid_tensor t) {
  return guard("braid_tensor_wait_to_read", [&] {
    Tensor& x = checked_tensor(t, "t");
    // As to_host: another thread may release t while this waits.
    const ContextRef hold(*x.ctx);
    const std::shared_ptr<Storage> storage = x.storage;
    wait_readable(*x.ctx, *storage, "wait_to_read");
  });
}

BRAID_API braid_status braid_tensor_host_data(braid_tensor t, void** data) {
  return guard("braid_tensor_host_data", [&] {
    require(data, "data");
    *data = nullptr;
    Tensor& x = checked_tensor(t, "t");
    require_computed(x, "host_data");
    const ContextRef hold(*x.ctx);  // as wait_to_read: another thread may release t meanwhile
    const std::shared_ptr<Storage> storage = x.storage;
    const uint64_t offset = x.offset;
    wait_readable(*x.ctx, *storage, "host_data");
    if (x.bytes() == 0) return;
    std::byte* p = host_address(*storage);
    if (!p)
      fail(BRAID_ERR_UNSUPPORTED, "host_data: ", storage->device->id,
           "'s memory is not host memory; copy it with braid_tensor_to_host");
    *data = p + offset;
  });
}

BRAID_API braid_status braid_tensor_to_host(braid_tensor t, void* data, size_t bytes) {
  return guard("braid_tensor_to_host", [&] {
    Tensor& x = checked_tensor(t, "t");
    check_bytes(x, bytes, "bytes");
    copy_to_host(x, data, bytes);
  });
}

BRAID_API braid_status braid_tensor_write_host(braid_tensor t, const void* data, size_t bytes) {
  return guard("braid_tensor_write_host", [&] {
    Tensor& x = checked_tensor(t, "t");
    check_bytes(x, bytes, "bytes");
    if (bytes == 0) return;
    require(data, "data");
    push_upload(x, data, bytes);
    forget_history(x);
  });
}

}  // extern "C"
