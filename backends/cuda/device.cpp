#include "device.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "buffer.h"
#include "device_guard.h"
#include "host.h"
#include "queue.h"

namespace {
// Error-flag slots come in chunks of pinned memory: one at open, another whenever every slot is held
// by a checked kernel in flight (a slot is held from launch to completion).
constexpr int kFlagChunk = 256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}
}  // namespace

braid_backend_device_t::braid_backend_device_t(int ordinal)
    : ordinal_(ordinal), events_(std::make_shared<braid::cuda::EventPool>(ordinal)) {
  const braid::cuda::DeviceGuard guard(ordinal);
  if (!guard.ok()) check(cudaSetDevice(ordinal), "cudaSetDevice");
  // Host-side synchronisation sleeps rather than spinning a core through blocking-sync events
  // (event_pool.cpp, staging): cudaSetDeviceFlags would change the primary context for every CUDA user
  // in the process.
  // Every handle goes into its owning member as soon as it exists: if a later step throws, the members
  // destroy what was made (the destructor below does not run for a half-built object).
  // An own pool rather than the device's default one: its settings (below) must not change the
  // behaviour of other CUDA users in the process.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal;
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  pool_ = braid::cuda::PoolHandle(ordinal, pool);
  // Keep freed memory in the pool instead of returning it at every synchronisation: the runtime's
  // caching allocator frees blocks it wants to recycle, and going back to the driver costs ~ms.
  // Out of memory trims the pool and retries (alloc below).
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  alloc_stream_ = braid::cuda::StreamHandle(ordinal, stream);
  check(grow_flags(), "cudaHostAlloc (error flags)");
  // Peer access where the hardware has it, so device-to-device copies go over NVLink/PCIe directly.
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess) {
    for (int o = 0; o < n; ++o) {
      int can = 0;
      if (o == ordinal || cudaDeviceCanAccessPeer(&can, o, ordinal) != cudaSuccess || !can) continue;
      cudaDeviceEnablePeerAccess(o, 0);
      // Pool memory is private to its device until the pool grants access to a peer.
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = o;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      cudaMemPoolSetAccess(pool, &access, 1);
    }
  }
  cudaGetLastError();  // "already enabled" is not an error for us
  blas_ = braid::cuda::cublas_lib(&blas_why_);
  if (blas_ == nullptr) braid::cuda::host::log(BRAID_LOG_WARNING, "cuBLAS unavailable, matmul will fail", blas_why_);
  // TF32 tensor cores change float32 matmul results (10-bit mantissa products); opt in only.
  const char* tf32 = std::getenv("BRAID_CUDA_TF32");
  tf32_ = tf32 != nullptr && std::strcmp(tf32, "1") == 0;
}

braid_backend_device_t::~braid_backend_device_t() {
  std::vector<std::unique_ptr<braid_backend_queue_t>> queues;
  {
    std::lock_guard lock(queues_mu_);
    queues.swap(queues_);
  }
  queues.clear();  // each queue drains and joins its threads (outside the lock: work_end may call in)
  const braid::cuda::DeviceGuard guard(ordinal_);
  // The allocation stream's pending frees reach the pool before the pool goes.
  if (alloc_stream_) cudaStreamSynchronize(alloc_stream_.get());
  alloc_stream_.reset();
  pool_.reset();         // buffers still allocated are freed with it
  flag_chunks_.clear();  // no kernel is left to write a flag: the queues are gone
  cudaGetLastError();
}

braid_status braid_backend_device_t::alloc(uint64_t bytes, braid_backend_buffer* out) {
  auto buffer = std::make_unique<braid_backend_buffer_t>();
  buffer->size = bytes;
  buffer->device = ordinal_;
  const size_t n = bytes == 0 ? 256 : static_cast<size_t>(bytes);  // a real, distinct allocation
  std::lock_guard lock(alloc_mu_);
  const braid::cuda::DeviceGuard guard(ordinal_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    void* p = nullptr;
    cudaError_t e = cudaMallocFromPoolAsync(&p, n, pool_.get(), alloc_stream_.get());
    if (e == cudaSuccess) e = cudaStreamSynchronize(alloc_stream_.get());
    if (e == cudaSuccess) {
      buffer->ptr = p;
      *out = buffer.release();
      return BRAID_OK;
    }
    cudaGetLastError();
    if (e != cudaErrorMemoryAllocation) return BRAID_ERR_DEVICE;
    // Out of memory: give the pool's cached blocks back to the driver and try once more.
    cudaStreamSynchronize(alloc_stream_.get());
    cudaMemPoolTrimTo(pool_.get(), 0);
  }
  return BRAID_ERR_OUT_OF_MEMORY;
}

void braid_backend_device_t::free(braid_backend_buffer buffer) {
  std::unique_ptr<braid_backend_buffer_t> owned(buffer);
  if (buffer == nullptr || buffer->ptr == nullptr) return;
  // The host frees a buffer only after every submission using it has ended (work_end comes after the
  // GPU finished), so a free ordered on the allocation stream is safe.
  std::lock_guard lock(alloc_mu_);
  const braid::cuda::DeviceGuard guard(ordinal_);
  if (cudaFreeAsync(buffer->ptr, alloc_stream_.get()) != cudaSuccess) cudaGetLastError();
}

void* braid_backend_device_t::scratch_alloc(size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  if (cudaMallocFromPoolAsync(&p, bytes == 0 ? 256 : bytes, pool_.get(), stream) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void braid_backend_device_t::scratch_free(void* p, cudaStream_t stream) {
  if (p != nullptr && cudaFreeAsync(p, stream) != cudaSuccess) cudaGetLastError();
}

cudaError_t braid_backend_device_t::grow_flags() {
  const size_t first = flag_chunks_.size() * kFlagChunk;
  if (first + kFlagChunk > size_t(std::numeric_limits<int>::max())) return cudaErrorMemoryAllocation;
  // Room for every slot, reserved before the memory is taken: release_flag (on the completion thread,
  // which cannot report a failure) then never reallocates, and nothing below can throw once the
  // pinned memory exists.
  free_flags_.reserve(first + kFlagChunk);
  flag_chunks_.reserve(flag_chunks_.size() + 1);
  void* p = nullptr;
  const braid::cuda::DeviceGuard guard(ordinal_);
  if (cudaError_t e = cudaHostAlloc(&p, kFlagChunk * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable);
      e != cudaSuccess)
    return e;
  flag_chunks_.emplace_back(ordinal_, p);
  for (size_t i = first + kFlagChunk; i-- > first;) free_flags_.push_back(int(i));
  return cudaSuccess;
}

int braid_backend_device_t::acquire_flag() {
  std::lock_guard lock(flag_mu_);
  if (free_flags_.empty() && grow_flags() != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  int s = free_flags_.back();
  free_flags_.pop_back();
  *flag_ptr_locked(s) = 0;
  return s;
}

// Under flag_mu_: a chunk added by another thread may reallocate flag_chunks_ meanwhile.
int* braid_backend_device_t::flag_ptr(int slot) {
  std::lock_guard lock(flag_mu_);
  return flag_ptr_locked(slot);
}

int* braid_backend_device_t::flag_ptr_locked(int slot) {
  return static_cast<int*>(flag_chunks_[size_t(slot) / kFlagChunk].get()) + slot % kFlagChunk;
}

void braid_backend_device_t::release_flag(int slot) {
  if (slot < 0) return;
  std::lock_guard lock(flag_mu_);
  free_flags_.push_back(slot);  // capacity reserved by grow_flags: never reallocates
}

bool braid_backend_device_t::failed(std::string* why) {
  if (!failed_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(fail_mu_);
  if (why != nullptr) *why = failure_;
  return true;
}

void braid_backend_device_t::set_failed(const std::string& why) {
  std::lock_guard lock(fail_mu_);
  if (failed_.load()) return;
  failure_ = why;
  failed_.store(true, std::memory_order_release);
  braid::cuda::host::log(BRAID_LOG_ERROR, "device " + std::to_string(ordinal_) + " failed: " + why);
}

braid_backend_queue_t* braid_backend_device_t::create_queue(braid_queue_kind kind) {
  auto q = std::make_unique<braid_backend_queue_t>(*this, kind);
  std::lock_guard lock(queues_mu_);
  queues_.push_back(std::move(q));
  return queues_.back().get();
}

bool braid_backend_device_t::is_queue_thread() {
  std::lock_guard lock(queues_mu_);
  for (const auto& q : queues_)
    if (q->on_own_thread()) return true;
  return false;
}

bool braid_backend_device_t::destroy_queue(braid_backend_queue_t* q) {
  std::unique_ptr<braid_backend_queue_t> owned;
  {
    std::lock_guard lock(queues_mu_);
    for (auto it = queues_.begin(); it != queues_.end(); ++it) {
      if (it->get() == q) {
        owned = std::move(*it);
        queues_.erase(it);
        break;
      }
    }
  }
  return owned != nullptr;  // destroyed here, outside the lock (it joins threads)
}
