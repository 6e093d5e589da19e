#include "tensor/tensor.h"

#include <cstring>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "device/device.h"
#include "tensor/handle_watch.h"

namespace braid {

namespace {

// The context's pool of tensor handles, made on first use: the context layer below only names it.
TensorPool& tensor_pool(Context& ctx) {
  std::call_once(ctx.tensors_made, [&] { ctx.tensors = std::make_shared<TensorPool>(); });
  return *ctx.tensors;
}

// A handle from the pool, owned by ctx (the first live one takes the live handles' context reference:
// TensorPool).
TensorRef acquire_tensor(Context& ctx, std::shared_ptr<Storage> storage, braid_dtype dtype, const Shape& shape) {
  Tensor* t = tensor_pool(ctx).acquire(ctx.refs);
  t->ctx = &ctx;
  if (storage->bytes >= kRecycleMinBytes) storage->handles.fetch_add(1, std::memory_order_relaxed);
  t->storage = std::move(storage);
  t->dtype = dtype;
  t->shape = shape;
  t->offset = 0;
  t->window = false;
  return TensorRef(t);
}

}  // namespace

namespace {
// An op's output shape is computed from its operands and attributes (a convolution's padding, say):
// one whose element count overflows int64 would wrap to a small or zero count. Refused, as an
// allocation that can never succeed.
void require_countable(const Shape& shape) {
  if (!shape.fits())
    fail(BRAID_ERR_OUT_OF_MEMORY, "tensor of shape ", shape.str(), " has more elements than int64 can count");
}
}  // namespace

TensorRef new_tensor(Context& ctx, Device& dev, braid_dtype dtype, const Shape& shape) {
  require_countable(shape);
  const auto numel = static_cast<uint64_t>(shape.numel());
  const uint64_t bytes = numel * dtype_size(dtype);
  if (numel != 0 && bytes / numel != dtype_size(dtype))
    fail(BRAID_ERR_OUT_OF_MEMORY, "tensor of shape ", shape.str(), " is too large");
  // More than the device has can never succeed: refused before asking the backend, whose allocator
  // might grant it lazily (overcommitted host memory) and fail only when the pages are touched.
  if (dev.props.memory_bytes != 0 && bytes > dev.props.memory_bytes)
    fail(BRAID_ERR_OUT_OF_MEMORY, "tensor of shape ", shape.str(), " (", bytes, " bytes) is larger than ", dev.id,
         "'s memory (", dev.props.memory_bytes, " bytes)");
  Block block = dev.allocator->allocate(bytes);
  auto storage =
      std::allocate_shared<Storage>(PoolAllocator<Storage>(&dev.storage_pool), &dev, dev.allocator.get(), block, bytes);
  if (TraceHook* hook = t_trace_hook) hook->created(*storage);
  return acquire_tensor(ctx, std::move(storage), dtype, shape);
}

TensorRef foreign_tensor(Context& ctx, Device& dev, braid_dtype dtype, const Shape& shape, braid_backend_buffer buffer,
                         std::unique_ptr<ForeignMemory> owner) {
  require_countable(shape);
  const uint64_t bytes = static_cast<uint64_t>(shape.numel()) * dtype_size(dtype);
  Block block;
  block.buffer = buffer;
  block.size = bytes;
  auto storage = std::allocate_shared<Storage>(PoolAllocator<Storage>(&dev.storage_pool), &dev, nullptr, block, bytes);
  storage->foreign = std::move(owner);
  if (TraceHook* hook = t_trace_hook) hook->created(*storage);
  return acquire_tensor(ctx, std::move(storage), dtype, shape);
}

TensorRef new_output_tensor(Context& ctx, Device& dev, braid_dtype dtype, const Shape& shape) {
  require_countable(shape);
  const auto numel = static_cast<uint64_t>(shape.numel());
  const uint64_t bytes = numel * dtype_size(dtype);
  // A kernel output while a trace only records: the kernel never runs, so its output takes no
  // memory (the graph's run plans it). Its storage says so, and is never offered for reuse.
  if (recording_without_running()) {
    if (numel != 0 && bytes / numel != dtype_size(dtype))
      fail(BRAID_ERR_OUT_OF_MEMORY, "tensor of shape ", shape.str(), " is too large");
    auto storage = std::allocate_shared<Storage>(PoolAllocator<Storage>(&dev.storage_pool), &dev, dev.allocator.get(),
                                                 Block{}, bytes);
    storage->recorded_only = true;
    t_trace_hook->created(*storage);
    return acquire_tensor(ctx, std::move(storage), dtype, shape);
  }
  // Only where it pays (a block of a few cache lines is as hot fresh from the allocator, whose small
  // blocks come back newest first) and where the op will run on the one compute queue.
  if (bytes >= kRecycleMinBytes && bytes / dtype_size(dtype) == numel && dev.more_compute.empty()) {
    std::shared_ptr<Storage> taken;
    {
      std::lock_guard lock(dev.recycled_mu);
      for (auto& slot : dev.recycled) {
        std::shared_ptr<Storage> s = slot.lock();
        if (s && s->bytes == bytes) {
          slot.reset();
          taken = std::move(s);
          break;
        }
      }
    }
    // Released handles are never reacquired, so no tensor views it; what may still use it are the
    // ops in flight, and an op on the compute queue is ordered after them for free only if they run
    // there too (a copy on another queue reading it would otherwise hold this op back).
    if (taken && ctx.engine->pending_only_on(*taken, dev.compute)) {
      if (TraceHook* hook = t_trace_hook) hook->created(*taken);  // a new value for a graph being traced
      return acquire_tensor(ctx, std::move(taken), dtype, shape);
    }
  }
  return new_tensor(ctx, dev, dtype, shape);
}

void require_computed(const Tensor& t, const char* what) {
  if (t.storage->recorded_only && !recording_without_running())
    fail(BRAID_ERR_INVALID_STATE, what,
         " was made inside a hybrid function while its first call traced it, and holds no value (the kernels "
         "run when the graph does: use the outputs braid_hybrid_call returns)");
}

TensorRef view_tensor(const Tensor& base, const Shape& shape) {
  TensorRef t = acquire_tensor(*base.ctx, base.storage, base.dtype, shape);
  t->offset = base.offset;
  t->window = base.window;
  return t;
}

TensorRef window_tensor(const Tensor& base, int64_t first, const Shape& shape) {
  TensorRef t = acquire_tensor(*base.ctx, base.storage, base.dtype, shape);
  t->offset = base.offset + static_cast<uint64_t>(first) * dtype_size(base.dtype);
  t->window = true;
  return t;
}

Tensor* TensorPool::acquire(std::atomic<int32_t>& context_refs) {
  std::lock_guard lock(mu_);
  Tensor* t;
  if (free_.size() > kQuarantine) {
    t = free_.front();
    free_.pop_front();
  } else {
    t = &slots_.emplace_back();
  }
  t->refs.store(1, std::memory_order_relaxed);
  t->held.store(0, std::memory_order_relaxed);
  t->magic.store(kLive, std::memory_order_release);
  if (live_++ == 0) context_refs.fetch_add(1);
  return t;
}

bool TensorPool::release(Tensor* t) noexcept {
  std::lock_guard lock(mu_);
  t->magic.store(kDead, std::memory_order_release);
  try {
    free_.push_back(t);
  } catch (...) {  // the slot is simply not reused
  }
  return --live_ == 0;
}

TensorRef& TensorRef::operator=(TensorRef&& o) noexcept {
  if (this != &o) {
    if (t_) {
      // held first, then refs: a concurrent braid_tensor_release that sees the new refs (acquire)
      // also sees the new held, and never counts this reference as the application's.
      t_->held.fetch_sub(1, std::memory_order_release);
      release_tensor(t_);
    }
    t_ = o.t_;
    o.t_ = nullptr;
  }
  return *this;
}

TensorRef::~TensorRef() {
  if (t_) {
    t_->held.fetch_sub(1, std::memory_order_release);
    release_tensor(t_);
  }
}

void retain_app_reference(Tensor& t) {
  t.refs.fetch_add(1);
  HandleWatch::note(&t, +1);
}

void release_app_reference(Tensor& t) {
  // The last tensor of a context the application already released destroys it: report a configured
  // profile that could not be written, as braid_context_release would have.
  const bool last = drop_app_reference(t);  // refused, changing nothing, beyond the application's own
  HandleWatch::note(&t, -1);
  if (!last) return;
  if (std::string error = destroy_tensor(&t); !error.empty()) fail(BRAID_ERR_IO, error);
}

bool drop_app_reference(Tensor& t) {
  int32_t n = t.refs.load(std::memory_order_acquire);
  do {
    if (n - t.held.load(std::memory_order_acquire) <= 0)
      fail(BRAID_ERR_INVALID_ARGUMENT,
           "t was already released as many times as it was made and retained (braid still holds it: a Trainer, a "
           "gradient buffer or a recorded op)");
  } while (!t.refs.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel, std::memory_order_acquire));
  return n == 1;
}

std::string release_tensor(Tensor* t) noexcept {
  if (t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return {};
  return destroy_tensor(t);
}

std::string destroy_tensor(Tensor* t) noexcept {
  Context* ctx = t->ctx;
  t->ag.reset();  // may release the tape behind this tensor (other handles, recursively)
  // The storage itself lives on while in-flight ops use it; a large one is offered to the next op
  // output of its size (docs/ENGINE.md, "Reusing a released storage").
  if (std::shared_ptr<Storage> s = std::move(t->storage); s->bytes >= kRecycleMinBytes &&
                                                          s->handles.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
                                                          s.use_count() > 1 && !s->recorded_only && !s->foreign) {
    Device& dev = *s->device;
    std::lock_guard lock(dev.recycled_mu);
    dev.recycled[dev.next_recycled++ % Device::kRecycleSlots] = s;
  }
  t->ctx = nullptr;
  // The last live handle drops the pool's context reference, which may be the context's last.
  return ctx->tensors->release(t) ? release_context(ctx) : std::string();
}

Tensor& checked_tensor(braid_tensor t, const char* what) {
  if (!t) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
  uint32_t magic = t->magic.load(std::memory_order_acquire);
  if (magic == TensorPool::kDead) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is a released tensor handle");
  if (magic != TensorPool::kLive) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a tensor handle");
  check_fork(*t->ctx);
  return *t;
}

std::byte* host_address(const Storage& s) {
  auto* base = static_cast<std::byte*>(s.device->api->buffer_host_pointer(s.block.buffer));
  return base ? base + s.block.offset : nullptr;
}
std::byte* host_address(const Tensor& t) {
  std::byte* p = host_address(*t.storage);
  return p ? p + t.offset : nullptr;
}

}  // namespace braid

uint64_t braid_tensor_t::bytes() const noexcept {
  return static_cast<uint64_t>(shape.numel()) * braid::dtype_size(dtype);
}

uint64_t braid_tensor_t::start() const noexcept { return storage->block.offset + offset; }

braid_buffer_view braid_tensor_t::view() const noexcept {
  braid_buffer_view v;
  write_view(v);
  return v;
}

void braid_tensor_t::write_view(braid_buffer_view& v) const noexcept {
  v.buffer = storage->block.buffer;
  v.byte_offset = start();
  v.dtype = braid::kernel_dtype(dtype);
  v.ndim = shape.ndim;
  // The unused dimensions are zeroed, not left stale: whole fixed-size arrays first (a few vector
  // stores, where a loop from ndim was a branchy loop or a memset call per view), then the row-major
  // strides in one pass over the dimensions in use.
  std::memset(v.shape, 0, sizeof v.shape);
  std::memset(v.strides, 0, sizeof v.strides);
  int64_t stride = 1;
  for (int i = shape.ndim - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    // Wraps for an empty tensor with huge dimensions, whose strides are never used (never overflows
    // for a non-empty one: its element count fits).
    stride = static_cast<int64_t>(static_cast<uint64_t>(stride) * static_cast<uint64_t>(shape[i]));
  }
}
