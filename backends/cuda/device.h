// One opened CUDA device: its memory pool (the allocator), event pool, error-flag slots, cuBLAS, and
// the queues created on it. A device that hit a sticky error (the CUDA context is corrupted) fails
// every later submission with that error instead of touching CUDA again.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "cublas_lib.h"
#include "cuda_handle.h"
#include "event_pool.h"

struct braid_backend_queue_t;

struct braid_backend_device_t {
 public:
  // Throws std::runtime_error (with the CUDA reason) if the device cannot be set up; what it had
  // already created is destroyed by its members (cuda_handle.h), so a failed open leaks nothing.
  explicit braid_backend_device_t(int ordinal);
  ~braid_backend_device_t();
  braid_backend_device_t(const braid_backend_device_t&) = delete;
  braid_backend_device_t& operator=(const braid_backend_device_t&) = delete;

  int ordinal() const { return ordinal_; }
  const std::shared_ptr<braid::cuda::EventPool>& events() const { return events_; }

  // ---- memory: a CUDA memory pool (cudaMallocFromPoolAsync) that keeps freed blocks for reuse ----
  braid_status alloc(uint64_t bytes, braid_backend_buffer* out);
  void free(braid_backend_buffer buffer);
  // Stream-ordered scratch for kernels (matmul operands that cuBLAS cannot take as they are).
  void* scratch_alloc(size_t bytes, cudaStream_t stream);
  void scratch_free(void* p, cudaStream_t stream);

  // ---- error flags: device-visible host ints a kernel sets when its input is bad (a label out of
  // range, an integer division by zero); read by the completion thread after the work finished.
  // The pool grows by a chunk whenever all slots are in flight, so a kernel never runs unchecked ----
  int acquire_flag();       // slot index, or -1 only when no pinned memory is left for a new chunk
  int* flag_ptr(int slot);  // mapped host pointer (also the device pointer: unified addressing)
  void release_flag(int slot);

  // ---- sticky failure ----
  bool failed(std::string* why);
  void set_failed(const std::string& why);

  // ---- cuBLAS (loaded at open; nullptr with a reason when missing) ----
  const braid::cuda::CublasLib* blas() const { return blas_; }
  const char* blas_why() const { return blas_why_; }
  bool tf32() const { return tf32_; }

  // ---- queues ----
  braid_backend_queue_t* create_queue(braid_queue_kind kind);
  bool destroy_queue(braid_backend_queue_t* q);
  bool is_queue_thread();  // true on one of this device's queue threads (which cannot join themselves)

 private:
  cudaError_t grow_flags();  // one more chunk of slots; under flag_mu_ (or in the constructor)
  int* flag_ptr_locked(int slot);

  int ordinal_;
  std::shared_ptr<braid::cuda::EventPool> events_;
  braid::cuda::PoolHandle pool_;
  braid::cuda::StreamHandle alloc_stream_;  // frees and allocations outside any queue
  std::mutex alloc_mu_;
  std::mutex flag_mu_;
  std::vector<braid::cuda::PinnedHostMemory> flag_chunks_;  // kFlagChunk ints each; slot s is in chunk s / kFlagChunk
  std::vector<int> free_flags_;
  std::mutex fail_mu_;
  std::atomic<bool> failed_{false};
  std::string failure_;
  const braid::cuda::CublasLib* blas_ = nullptr;
  const char* blas_why_ = "";
  bool tf32_ = false;
  std::mutex queues_mu_;
  std::vector<std::unique_ptr<braid_backend_queue_t>> queues_;
};

using Device = braid_backend_device_t;
