// The tensor handle behind braid_tensor: a dtype and shape over a storage (always row-major
// contiguous; reshape shares the storage, every other layout change copies).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "core/shape.h"
#include "core/spin_lock.h"
#include "device/device.h"
#include "engine/storage.h"

struct braid_context_t;
namespace braid::autograd {
struct Meta;
}

struct braid_tensor_t {
  std::atomic<uint32_t> magic{0};
  std::atomic<int32_t> refs{0};
  // The part of refs that libbraid holds through TensorRef (a Trainer's or KVStore's parameters, a
  // gradient buffer, an op's operand on the tape, an output not yet handed out): refs - held are the
  // application's. braid_tensor_release refuses a release beyond those, which would otherwise take
  // an internal holder's reference and free the handle under it (issue 31).
  std::atomic<int32_t> held{0};
  braid_context_t* ctx = nullptr;
  std::shared_ptr<braid::Storage> storage;
  braid_dtype dtype = BRAID_FLOAT32;
  braid::Shape shape;
  // A window (braid_view, or a reshape of one): the tensor's elements begin `offset` bytes into the
  // storage and may cover only part of it. Every other tensor starts at the storage's start.
  uint64_t offset = 0;
  bool window = false;
  // Autograd state (gradient buffer, producing node); NULL for tensors autograd never saw.
  std::shared_ptr<braid::autograd::Meta> ag;

  braid::Device& device() const noexcept { return *storage->device; }
  // Where the elements begin in the device buffer (a kernel view's byte_offset for the whole tensor).
  uint64_t start() const noexcept;
  uint64_t bytes() const noexcept;
  // A view for a kernel call: the whole tensor, contiguous.
  braid_buffer_view view() const noexcept;
  // Writes the view into v (an op's call slot) without building a temporary: every op does this for
  // every operand, and the view is 150 bytes.
  void write_view(braid_buffer_view& v) const noexcept;
};

namespace braid {

using Tensor = braid_tensor_t;

// Owns tensor handle objects for a context. Released handles are quarantined (reused only after
// many later releases) and marked dead, so a call with a released handle is reported, not a crash.
//
// Live handles keep their context alive together, through one context reference that the pool
// takes when the first handle is acquired and its caller drops when the last is released (the return
// value says when). The count is kept under the pool's lock, which every acquire and release takes
// anyway, so a tensor costs no atomic operation on the context's shared counter. The reference is
// taken under that lock too: taken after it, a release of the last handle on another thread could
// drop the old reference, and the application its own, in between, and destroy the context under
// the new handle (seen under TSan).
class TensorPool {
 public:
  static constexpr uint32_t kLive = 0x7e45011e;
  static constexpr uint32_t kDead = 0xdeadbeef;
  // context_refs: the owning context's counter, incremented when no other handle was live.
  Tensor* acquire(std::atomic<int32_t>& context_refs);
  // t must have no references left. Returns true when it was the last live handle: the caller then
  // drops the context reference (after this returns; it may destroy the context and this pool).
  bool release(Tensor* t) noexcept;

 private:
  static constexpr size_t kQuarantine = 4096;
  SpinLock mu_;
  std::deque<Tensor> slots_;  // stable addresses
  std::deque<Tensor*> free_;  // FIFO
  size_t live_ = 0;           // handles acquired and not released
};

// Holds one reference to a tensor; releases it unless handed out with release().
class TensorRef {
 public:
  TensorRef() = default;
  // Takes over one reference to t, which from then on is libbraid's (Tensor::held).
  explicit TensorRef(Tensor* t) noexcept : t_(t) {
    if (t_) t_->held.fetch_add(1, std::memory_order_relaxed);
  }
  TensorRef(TensorRef&& o) noexcept : t_(o.t_) { o.t_ = nullptr; }
  TensorRef& operator=(TensorRef&& o) noexcept;
  ~TensorRef();
  Tensor* get() const noexcept { return t_; }
  Tensor* operator->() const noexcept { return t_; }
  Tensor& operator*() const noexcept { return *t_; }
  // Hands the reference on (to the application, usually): it is no longer libbraid's.
  Tensor* release() noexcept {
    Tensor* t = t_;
    if (t) t->held.fetch_sub(1, std::memory_order_release);
    t_ = nullptr;
    return t;
  }

 private:
  Tensor* t_ = nullptr;
};

struct Device;

// A new, uninitialised tensor on device (allocates; throws BRAID_ERR_OUT_OF_MEMORY).
TensorRef new_tensor(::braid_context_t& ctx, Device& device, braid_dtype dtype, const Shape& shape);
// The same for an op's output that the op overwrites entirely and that is pushed to the device's
// compute queue (OpBuilder::output): it may take over a storage of the same size that the
// application released while ops on that queue still use it (docs/ENGINE.md, "Reusing a released
// storage"), ordered after them by the storage's engine variable.
TensorRef new_output_tensor(::braid_context_t& ctx, Device& device, braid_dtype dtype, const Shape& shape);
// A tensor over memory braid does not own (buffer: the device's handle over it), which `owner` hands
// back to its owner when the storage is freed, after the last handle and the last op using it.
TensorRef foreign_tensor(::braid_context_t& ctx, Device& device, braid_dtype dtype, const Shape& shape,
                         braid_backend_buffer buffer, std::unique_ptr<ForeignMemory> owner);
// A new tensor handle over an existing storage (reshape): base's elements in another shape, a window
// where base is one.
TensorRef view_tensor(const Tensor& base, const Shape& shape);
// A window of base: as many elements as `shape` holds, from element `first` of base's row-major
// elements, sharing its storage (braid_view).
TensorRef window_tensor(const Tensor& base, int64_t first, const Shape& shape);
// Refuses (BRAID_ERR_INVALID_STATE, naming `what`) a tensor that a trace made without running its
// kernel (Storage::recorded_only), unless that trace still records: it has no memory and no value.
void require_computed(const Tensor& t, const char* what);

// Host address of a storage's data (or a tensor's first element) when its device's memory is plain
// host memory, else NULL.
std::byte* host_address(const Storage& s);
std::byte* host_address(const Tensor& t);

// Validates a handle from the application (NULL, released, stale after fork) and returns it.
Tensor& checked_tensor(braid_tensor t, const char* what);
// Drops one reference; the last one frees the handle and lets go of the storage and context. Returns
// release_context's profile error when that destroyed the context (internal callers ignore it).
std::string release_tensor(Tensor* t) noexcept;
// braid_tensor_release: drops one of the application's references (refs - held), or fails with
// BRAID_ERR_INVALID_ARGUMENT, changing nothing, when it has none left. Returns whether that was the
// last reference of all: the caller then calls destroy_tensor.
bool drop_app_reference(Tensor& t);
// Tears down a handle whose last reference is gone (release_tensor's second half); returns what
// release_context returns when that was the context's last reference.
std::string destroy_tensor(Tensor* t) noexcept;
// braid_tensor_retain and braid_tensor_release, for the runtime acting on the application's behalf (a
// hybrid function's inputs and outputs): references of the application's, seen by HandleWatch. The
// release throws as braid_tensor_release fails.
void retain_app_reference(Tensor& t);
void release_app_reference(Tensor& t);

}  // namespace braid
