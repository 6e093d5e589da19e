#include "tensor/tensor.h"

#include <cstring>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"

namespace braid {

Tensor* TensorPool::acquire(bool* first) {
  std::lock_guard lock(mu_);
  Tensor* t;
  if (free_.size() > kQuarantine) {
    t = free_.front();
    free_.pop_front();
  } else {
    t = &slots_.emplace_back();
  }
  t->refs.store(1, std::memory_order_relaxed);
  t->magic.store(kLive, std::memory_order_release);
  *first = live_++ == 0;
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
    if (t_) release_tensor(t_);
    t_ = o.t_;
    o.t_ = nullptr;
  }
  return *this;
}

TensorRef::~TensorRef() {
  if (t_) release_tensor(t_);
}

std::string release_tensor(Tensor* t) noexcept {
  if (t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return {};
  Context* ctx = t->ctx;
  t->ag.reset();       // may release the tape behind this tensor (other handles, recursively)
  // The storage itself lives on while in-flight ops use it; a large one is offered to the next op
  // output of its size (docs/ENGINE.md, "Reusing a released storage").
  if (std::shared_ptr<Storage> s = std::move(t->storage);
      s->bytes >= kRecycleMinBytes && s->handles.fetch_sub(1, std::memory_order_acq_rel) == 1 && s.use_count() > 1) {
    Device& dev = *s->device;
    std::lock_guard lock(dev.recycled_mu);
    dev.recycled[dev.next_recycled++ % Device::kRecycleSlots] = s;
  }
  t->ctx = nullptr;
  // The last live handle drops the pool's context reference, which may be the context's last.
  return ctx->tensors.release(t) ? release_context(ctx) : std::string();
}

Tensor& checked_tensor(braid_tensor t, const char* what) {
  if (!t) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is NULL");
  uint32_t magic = t->magic.load(std::memory_order_acquire);
  if (magic == TensorPool::kDead) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is a released tensor handle");
  if (magic != TensorPool::kLive) fail(BRAID_ERR_INVALID_ARGUMENT, what, " is not a tensor handle");
  check_fork(*t->ctx);
  return *t;
}

}  // namespace braid

uint64_t braid_tensor_t::bytes() const noexcept {
  return static_cast<uint64_t>(shape.numel()) * braid::dtype_size(dtype);
}

braid_buffer_view braid_tensor_t::view() const noexcept {
  braid_buffer_view v;
  write_view(v);
  return v;
}

void braid_tensor_t::write_view(braid_buffer_view& v) const noexcept {
  v.buffer = storage->block.buffer;
  v.byte_offset = storage->block.offset;
  v.dtype = dtype;
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
