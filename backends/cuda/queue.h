// A queue is one CUDA stream (non-blocking) with two threads:
//  - the submit thread takes submissions in order, turns their semaphore waits into
//    cudaStreamWaitEvent (blocking only while a waited-on value has not even been recorded yet),
//    launches the kernel or copy on the stream and records an event from the device's pool;
//  - the completion thread synchronises on those events in order (blocking-sync events: it sleeps),
//    then calls host->work_end and signals the semaphore.
// Completions run on our own thread rather than in cudaLaunchHostFunc callbacks because the host's
// work_end may call back into the backend (submit, free), and CUDA forbids CUDA calls inside a host
// function. work_begin is not called (see braid_backend.h): the host resolves failures in work_end.
#pragma once
#include <cuda_runtime.h>
#include <array>
#include <utility>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "braid_backend.h"
#include "cublas_lib.h"
#include "cuda_handle.h"
#include "device.h"

struct braid_backend_queue_t {
 public:
  // Throws std::runtime_error (no stream) or std::system_error (a thread cannot start), having
  // stopped the thread that did start and destroyed the stream.
  braid_backend_queue_t(braid_backend_device_t& device, braid_queue_kind kind);
  // Drains what was submitted, then joins both threads. Bounded: a wait for a semaphore value that no
  // queue has recorded is given up after a grace period (queue.cpp), failing its work.
  ~braid_backend_queue_t();
  braid_backend_queue_t(const braid_backend_queue_t&) = delete;
  braid_backend_queue_t& operator=(const braid_backend_queue_t&) = delete;

  braid_status submit(const braid_work& work, const char** why);
  braid_backend_device_t& device() { return device_; }
  bool on_own_thread() const;

  // Used by copies (copy.cpp): two pinned staging buffers with their events, made on first use.
  static constexpr size_t kStageBytes = size_t(4) << 20;
  bool staging(void* (&buf)[2], cudaEvent_t (&ev)[2]);
  cudaStream_t stream() const { return stream_.get(); }

 private:
  struct Submission {
    braid_work work;
    braid_kernel_call call;
    braid_copy_desc copy;
    // KERNELS: the calls when the host's are not persistent (then work.kernels is NULL); else the
    // host's array stays in work.kernels.
    std::vector<braid_kernel_call> calls;
  };
  struct Completion {
    cudaEvent_t event = nullptr;
    bool event_in_semaphore = false;  // the semaphore recycles it when signalled; else the queue does
    void* token = nullptr;
    braid_backend_semaphore_t* signal = nullptr;
    uint64_t value = 0;
    braid_status status = BRAID_OK;
    std::string message;
    int flag = -1;
    braid_kernel_op op = BRAID_KOP_FILL;
    // KERNELS: the flag belongs to call flag_call of num_calls (messages name it); num_calls 0 else.
    uint32_t flag_call = 0, num_calls = 0;
    bool stop = false;
    // The semaphores the work waited on, with their values: ended before this work's end is reported.
    std::array<std::pair<braid_backend_semaphore_t*, uint64_t>, BRAID_MAX_WAITS> waits{};
    uint32_t num_waits = 0;
  };

  void submit_loop();
  void complete_loop();
  void run(Submission& s, Completion& c);
  // Launches one call on the stream; a call that needs an error flag gets one in `flag` (-1 if none).
  braid_status launch(const braid_kernel_call& call, int& flag, std::string& message);
  void run_kernels(const Submission& s, Completion& c);
  void push_completion(Completion&& c);
  void stop_submitter();  // closes the queue and joins the submit thread if it runs

  braid_backend_device_t& device_;
  braid_queue_kind kind_;
  braid::cuda::StreamHandle stream_;
  cublasHandle_t blas_ = nullptr;
  void* stage_[2] = {nullptr, nullptr};
  cudaEvent_t stage_ev_[2] = {nullptr, nullptr};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Submission> pending_;
  bool closing_ = false;
  std::atomic<bool> stop_waits_{false};  // set by the destructor: give up waits that have not come yet

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::deque<Completion> done_;

  // Set when each loop returns, so the destructor can wait for a drain with a time limit (the futures
  // are taken here, before the threads start: get_future must not race with set_value).
  std::promise<void> submit_exited_, complete_exited_;
  std::future<void> submit_exit_ = submit_exited_.get_future();
  std::future<void> complete_exit_ = complete_exited_.get_future();
  std::thread submitter_, completer_;
};

using Queue = braid_backend_queue_t;
