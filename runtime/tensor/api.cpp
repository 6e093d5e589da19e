// The C ABI of tensors: creation from host data, queries, waits and host copies.
#include <cstring>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "ops/op_builder.h"
#include "ops/recorder.h"
#include "tensor/handle_watch.h"
#include "tensor/tensor.h"

using namespace braid;

namespace {

void check_bytes(const Tensor& t, size_t bytes, const char* what) {
  if (bytes != t.bytes())
    fail(BRAID_ERR_INVALID_ARGUMENT, what, " is ", bytes, " bytes but the tensor of shape ", t.shape.str(),
         " and dtype ", dtype_name(t.dtype), " holds ", t.bytes());
}

// t's whole value was replaced by one autograd did not record: it has no history from now on
// (ops/recorder.h).
void forget_history(Tensor& t) {
  if (const OpRecorder* r = t.ctx->recording.recorder()) r->overwritten(*t.ctx, t);
}

// Pushes an upload of host bytes into t (ordered after earlier ops on t). The bytes are copied first.
// The upload overwrites all of t's storage (bytes == t.bytes() == the storage's size) and reads none of
// it, so the storage is only a write: as a write it is still ordered after the earlier readers and
// writers, but it never inherits a failed last writer's error, which is how overwriting a poisoned
// tensor makes it readable again (docs/ENGINE.md).
void push_upload(Tensor& t, const void* data, size_t bytes) {
  Context& ctx = *t.ctx;
  Storage* s = t.storage.get();
  if (s->recorded_only)  // no memory behind it (and, while traced, a value only the graph computes)
    fail(BRAID_ERR_INVALID_STATE,
         "write_host: the tensor was made inside a hybrid function while its first call traced it, and has no "
         "memory (only kernels are captured)");
  if (TraceHook* hook = t_trace_hook) hook->untraced_write(*s, nullptr);
  s->bump_version();  // a value autograd saved is no longer what the tape says
  // A large whole host-memory storage that no op is using is written right here: one copy, where the
  // queued upload first copies into a fresh buffer whose pages the kernel must fault in (braid-info
  // --measure, 64 MiB to cpu:0 on an AMD EPYC: 2.2 GB/s queued, 20.9 GB/s this way). Small uploads
  // stay queued: their buffer is cheap, and they keep write_host's order with the device's queues.
  constexpr size_t kDirectMinBytes = size_t{64} << 10;
  std::byte* dst = host_address(t);
  const bool dst_visible = dst != nullptr;
  if (dst_visible && bytes >= kDirectMinBytes && bytes == s->bytes && ctx.engine->claim_for_host_write(*s)) {
    std::memcpy(dst, data, bytes);  // an op another thread pushes on s meanwhile waits for this
    ctx.engine->end_host_write(*s);
    return;
  }
  // Device memory the host cannot write (CUDA, Vulkan): a large upload that would wait for nothing but
  // the transfer queue's own work has that queue read the caller's memory, and the call waits for the
  // copy. The queued upload below first copies the data into a fresh host buffer so that the call can
  // return at once, and faulting that buffer in made 64 MiB to vulkan:0 (lavapipe) go at 1.4 GB/s
  // instead of 11.5. Not from an engine thread (it cannot wait), nor while a trace records.
  constexpr size_t kWaitMinBytes = size_t{1} << 20;
  const bool whole = bytes == s->bytes;
  Device& dev = t.device();
  const bool wait_here = !dst_visible && whole && bytes >= kWaitMinBytes && t_trace_hook == nullptr &&
                         Engine::may_wait() && ctx.engine->pending_only_on(*s, dev.transfer);
  auto node = ctx.engine->make_node("write_host", dev);
  node->work.kind = BRAID_WORK_COPY;
  if (wait_here) {
    node->copy.src_host = data;
  } else {
    node->host_data.assign(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + bytes);
    node->copy.src_host = node->host_data.data();
  }
  node->copy.dst_buffer = t.storage->block.buffer;
  node->copy.dst_offset = t.storage->block.offset;
  node->copy.bytes = bytes;
  ctx.engine->throttle(dev);
  // A partial upload (never made today: every tensor view covers its whole storage) would keep the
  // rest of the old value, so it would read the storage too.
  const std::shared_ptr<OpNode> waited = wait_here ? node : nullptr;
  ctx.engine->push(std::move(node), {&s, whole ? 0u : 1u}, {&s, 1}, BRAID_QUEUE_TRANSFER);
  if (waited) {
    // The copy reads the caller's memory until it ends, which is what the wait waits for. The wait
    // returns early only on a timeline the engine failed because its queue refuses work.
    WaitResult r = ctx.engine->wait(waited);
    if (r.status != BRAID_OK) fail(r.status, r.message);
  }
}

void wait_readable(Context& ctx, Storage& s, const char* what) {
  int64_t t0 = ctx.profiler.enabled() ? ctx.profiler.now() : 0;
  WaitResult r = ctx.engine->wait_to_read(s);
  if (t0) ctx.profiler.record_wait(what, t0, ctx.profiler.now());
  if (r.status != BRAID_OK) fail(r.status, r.message);
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
    TensorRef t = new_tensor(c, d, dtype, s);
    if (need > 0) {
      // A fresh storage has no readers or writers yet, so host memory can be filled directly.
      if (std::byte* dst = host_address(*t))
        std::memcpy(dst, data, need);
      else
        push_upload(*t, data, need);
    }
    *out = t.release();
  });
}

BRAID_API braid_status braid_tensor_retain(braid_tensor t) {
  return guard("braid_tensor_retain", [&] {
    checked_tensor(t, "t").refs.fetch_add(1);
    HandleWatch::note(t, +1);
  });
}

BRAID_API braid_status braid_tensor_release(braid_tensor t) {
  return guard("braid_tensor_release", [&] {
    // The last tensor of a context the application already released destroys it: report a
    // configured profile that could not be written, as braid_context_release would have.
    Tensor& x = checked_tensor(t, "t");
    const bool last = drop_app_reference(x);  // refused, changing nothing, beyond the application's own
    HandleWatch::note(&x, -1);
    if (!last) return;
    if (std::string error = destroy_tensor(&x); !error.empty()) fail(BRAID_ERR_IO, error);
  });
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

BRAID_API braid_status braid_tensor_to_host(braid_tensor t, void* data, size_t bytes) {
  return guard("braid_tensor_to_host", [&] {
    Tensor& x = checked_tensor(t, "t");
    check_bytes(x, bytes, "bytes");
    if (recording_without_running())
      fail(BRAID_ERR_INVALID_STATE,
           "tensor_to_host: a hybrid function reads a value while it is traced (its kernels run only "
           "once the graph does; return the value as an output and read it after braid_hybrid_call)");
    require_computed(x, "tensor_to_host");
    if (bytes == 0) return;
    require(data, "data");
    // Another thread may release t while this waits (its last handle, and the context's last
    // reference with it): the call holds the storage and the context itself, and reads t no more.
    Context& ctx = *x.ctx;
    const ContextRef hold(ctx);
    const std::shared_ptr<Storage> storage = x.storage;
    wait_readable(ctx, *storage, "to_host");
    // Host memory is copied right here, registered as a host read so that a write another thread
    // pushes meanwhile waits for the copy instead of tearing it. If another thread wrote since the
    // wait above (or the host is writing it), the read is queued in program order instead, as for
    // device memory: retrying could chase a writer that keeps pushing.
    const std::byte* src = host_address(*storage);
    if (src && ctx.engine->begin_host_read(*storage)) {
      std::memcpy(data, src, bytes);
      ctx.engine->end_host_read(*storage);
      return;
    }
    auto node = ctx.engine->make_node("to_host", *storage->device);
    node->work.kind = BRAID_WORK_COPY;
    node->copy.src_buffer = storage->block.buffer;
    node->copy.src_offset = storage->block.offset;
    node->copy.dst_host = data;
    node->copy.bytes = bytes;
    Storage* s = storage.get();
    ctx.engine->push(node, {&s, 1}, {}, BRAID_QUEUE_TRANSFER);
    WaitResult r = ctx.engine->wait(node);
    if (r.status != BRAID_OK) fail(r.status, r.message);
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
