// Copies between tensors and host memory, for the C API and for the layers above that read or write
// tensors' values (checkpoints, KVStore servers) without going back through the C API.
#include "tensor/host_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "tensor/recorder.h"

namespace braid {

namespace {

// A bool's bytes as braid stores them, 0 or 1: host bytes that are neither (C's nonzero true, a bool
// view of arbitrary memory) are made 1 in `buf` first, so that a cast or a sum sees true as 1.
const void* bool_bytes(const void* data, size_t bytes, std::vector<std::byte>& buf) {
  const auto* p = static_cast<const std::byte*>(data);
  if (std::all_of(p, p + bytes, [](std::byte b) { return b <= std::byte{1}; })) return data;
  buf.resize(bytes);
  std::transform(p, p + bytes, buf.begin(),
                 [](std::byte b) { return b != std::byte{0} ? std::byte{1} : std::byte{0}; });
  return buf.data();
}

}  // namespace

// Pushes an upload of host bytes into t (ordered after earlier ops on t). The bytes are copied first.
// The upload overwrites all of t's storage (bytes == t.bytes() == the storage's size) and reads none of
// it, so the storage is only a write: as a write it is still ordered after the earlier readers and
// writers, but it never inherits a failed last writer's error, which is how overwriting a poisoned
// tensor makes it readable again (docs/ENGINE.md).
void push_upload(Tensor& t, const void* data, size_t bytes) {
  std::vector<std::byte> normalized;
  if (t.dtype == BRAID_BOOL) data = bool_bytes(data, bytes, normalized);
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
  const bool whole = bytes == s->bytes && t.offset == 0;  // else a window: the rest of the storage stays
  if (dst_visible && bytes >= kDirectMinBytes && whole && ctx.engine->claim_for_host_write(*s)) {
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
  node->copy.dst_offset = t.start();
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

TensorRef tensor_from_host(Context& ctx, Device& dev, braid_dtype dtype, const Shape& shape, const void* data) {
  TensorRef t = new_tensor(ctx, dev, dtype, shape);
  const uint64_t bytes = t->bytes();
  if (bytes > 0) {
    // A fresh storage has no readers or writers yet, so host memory can be filled directly.
    std::vector<std::byte> normalized;
    if (dtype == BRAID_BOOL) data = bool_bytes(data, bytes, normalized);
    if (std::byte* dst = host_address(*t))
      std::memcpy(dst, data, bytes);
    else
      push_upload(*t, data, bytes);
  }
  return t;
}

void copy_to_host(Tensor& x, void* data, size_t bytes) {
  if (recording_without_running())
    fail(BRAID_ERR_INVALID_STATE,
         "tensor_to_host: a hybrid function reads a value while it is traced (its kernels run only "
         "once the graph does; return the value as an output and read it after braid_hybrid_call)");
  require_computed(x, "tensor_to_host");
  if (bytes == 0) return;
  if (!data) fail(BRAID_ERR_INVALID_ARGUMENT, "data is NULL");
  // Another thread may release t while this waits (its last handle, and the context's last
  // reference with it): the call holds the storage and the context itself, and reads t no more.
  Context& ctx = *x.ctx;
  const ContextRef hold(ctx);
  const std::shared_ptr<Storage> storage = x.storage;
  const uint64_t offset = x.offset;  // a window's first byte in the storage
  wait_readable(ctx, *storage, "to_host");
  // Host memory is copied right here, registered as a host read so that a write another thread
  // pushes meanwhile waits for the copy instead of tearing it. If another thread wrote since the
  // wait above (or the host is writing it), the read is queued in program order instead, as for
  // device memory: retrying could chase a writer that keeps pushing.
  const std::byte* src = host_address(*storage);
  if (src && ctx.engine->begin_host_read(*storage)) {
    std::memcpy(data, src + offset, bytes);
    ctx.engine->end_host_read(*storage);
    return;
  }
  auto node = ctx.engine->make_node("to_host", *storage->device);
  node->work.kind = BRAID_WORK_COPY;
  node->copy.src_buffer = storage->block.buffer;
  node->copy.src_offset = storage->block.offset + offset;
  node->copy.dst_host = data;
  node->copy.bytes = bytes;
  Storage* s = storage.get();
  ctx.engine->push(node, {&s, 1}, {}, BRAID_QUEUE_TRANSFER);
  WaitResult r = ctx.engine->wait(node);
  if (r.status != BRAID_OK) fail(r.status, r.message);
}

}  // namespace braid
