// braid_tensor_from_dlpack: a tensor over another library's host memory, without a copy (DLPack's
// consumer side; the producer side is braid_tensor_host_data, which the bindings wrap).
#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdint>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tensor/tensor.h"

using namespace braid;

namespace {

// DLPack 0.8's kDLBool; Debian's dlpack.h (0.6) predates it.
constexpr uint8_t kDLBoolCode = 6;

braid_dtype dtype_of(const DLDataType& t) {
  if (t.lanes == 1) {
    switch (t.code) {
      case kDLFloat:
        if (t.bits == 32) return BRAID_FLOAT32;
        if (t.bits == 64) return BRAID_FLOAT64;
        if (t.bits == 16) return BRAID_FLOAT16;
        break;
      case kDLInt:
        if (t.bits == 32) return BRAID_INT32;
        if (t.bits == 64) return BRAID_INT64;
        break;
      case kDLUInt:
        if (t.bits == 8) return BRAID_UINT8;
        break;
      case kDLBfloat:
        if (t.bits == 16) return BRAID_BFLOAT16;
        break;
      case kDLBoolCode:
        if (t.bits == 8) return BRAID_BOOL;
        break;
      default: break;
    }
  }
  fail(BRAID_ERR_DTYPE, "tensor_from_dlpack: DLPack dtype (code ", int(t.code), ", ", int(t.bits), " bits, ", t.lanes,
       " lanes) is none of braid's dtypes");
}

// The producer's tensor, given back through its deleter once braid no longer uses the memory (the
// storage's destructor: after the last handle and the last op).
struct DlpackMemory final : ForeignMemory {
  const braid_backend_api* api;
  braid_backend_device device;
  braid_backend_buffer buffer;
  DLManagedTensor* managed;
  bool owned = false;  // set once the import succeeded: until then the caller keeps the tensor
  DlpackMemory(const braid_backend_api* a, braid_backend_device d, braid_backend_buffer b, DLManagedTensor* m)
      : api(a), device(d), buffer(b), managed(m) {}
  DlpackMemory(const DlpackMemory&) = delete;
  DlpackMemory& operator=(const DlpackMemory&) = delete;
  ~DlpackMemory() override {
    api->buffer_free(device, buffer);
    if (owned && managed->deleter) managed->deleter(managed);
  }
};

}  // namespace

BRAID_API braid_status braid_tensor_from_dlpack(braid_context ctx, braid_device device, void* managed,
                                                braid_tensor* out) {
  return guard("braid_tensor_from_dlpack", [&] {
    require(out, "out");
    *out = nullptr;
    require(managed, "managed");
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    Device& dev = c.device(device, "device");
    auto* m = static_cast<DLManagedTensor*>(managed);
    const DLTensor& t = m->dl_tensor;
    if (t.device.device_type != kDLCPU)
      fail(BRAID_ERR_UNSUPPORTED, "tensor_from_dlpack: the memory is on DLPack device type ", int(t.device.device_type),
           "; only host memory (kDLCPU) is imported");
    if (!dev.props.host_visible || dev.api->buffer_import_host == nullptr)
      fail(BRAID_ERR_UNSUPPORTED, "tensor_from_dlpack: ", dev.id,
           " cannot use host memory it did not allocate; import onto a CPU device and copy");
    const braid_dtype dtype = dtype_of(t.dtype);
    const Shape shape = Shape::from(t.ndim, t.shape, "tensor_from_dlpack: shape");
    // Row-major and compact, as braid's tensors are: a dimension of 1 may have any stride.
    if (t.strides != nullptr) {
      int64_t expect = 1;
      for (int d = t.ndim - 1; d >= 0; --d) {
        if (t.shape[d] != 1 && t.strides[d] != expect)
          fail(BRAID_ERR_INVALID_ARGUMENT, "tensor_from_dlpack: the tensor is not C-contiguous (stride ", t.strides[d],
               " on axis ", d, " where ", expect, " was expected); copy it first");
        expect *= t.shape[d];
      }
    }
    const uint64_t bytes = static_cast<uint64_t>(shape.numel()) * dtype_size(dtype);
    if (bytes > 0) require(t.data, "managed->dl_tensor.data");
    braid_backend_buffer buffer = nullptr;
    std::byte* data = static_cast<std::byte*>(t.data) + t.byte_offset;
    // Kernels read elements at their own alignment, and a bool as 0 or 1: memory that is neither is
    // refused (the caller copies it instead).
    if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) != 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "tensor_from_dlpack: the data is not aligned to its ", dtype_size(dtype),
           "-byte elements; copy it first");
    if (dtype == BRAID_BOOL && !std::all_of(data, data + bytes, [](std::byte b) { return b <= std::byte{1}; }))
      fail(BRAID_ERR_INVALID_ARGUMENT, "tensor_from_dlpack: a bool byte is neither 0 nor 1; copy it first");
    if (braid_status st = dev.api->buffer_import_host(dev.handle, data, bytes, &buffer); st != BRAID_OK)
      fail(st, "tensor_from_dlpack: ", dev.id, " refused the memory");
    std::unique_ptr<DlpackMemory> owner;
    try {
      owner = std::make_unique<DlpackMemory>(dev.api, dev.handle, buffer, m);
    } catch (...) {
      dev.api->buffer_free(dev.handle, buffer);
      throw;
    }
    DlpackMemory& memory = *owner;
    TensorRef y = foreign_tensor(c, dev, dtype, shape, buffer, std::move(owner));
    memory.owned = true;  // braid calls the deleter from now on; a failure above left it to the caller
    *out = y.release();
  });
}
