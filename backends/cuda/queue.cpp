#include "queue.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "buffer.h"
#include "copy.h"
#include "device_guard.h"
#include "host.h"
#include "kernels/kernels.h"
#include "timeline_semaphore.h"
#include "work_checks.h"

namespace {
// How long a closing queue lets each of its threads drain before waits for semaphore values that no
// queue has recorded are given up. Everything else a drain waits for finishes by itself (GPU work,
// recorded events); such a value may never come at shutdown (its producer was never submitted, or the
// host that would signal it is tearing down), but a producer on another queue that is still running
// may also be about to record it, so it gets this long rather than nothing.
constexpr auto kCloseGrace = std::chrono::seconds(1);

// BRAID_CUDA_TRACE=1: a debug log line (BRAID_LOG=debug prints it) at each step of each submission -
// taken, waits resolved, launched, synchronised, ended - naming the queue, the value it signals and
// what it waits for. With a stack dump this is what a hang on a GPU needs to be read (docs/CUDA.md).
bool tracing() {
  static const bool on = [] {
    const char* v = std::getenv("BRAID_CUDA_TRACE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void trace(const void* queue, const char* what, uint64_t value, const std::string& more = {}) {
  char head[96];
  std::snprintf(head, sizeof head, "trace q%p %s v=%llu", queue, what, static_cast<unsigned long long>(value));
  braid::cuda::host::log(BRAID_LOG_DEBUG, more.empty() ? std::string(head) : std::string(head) + " " + more);
}

std::string waits_text(const braid_work& w) {
  std::string out;
  char one[64];
  for (uint32_t k = 0; k < w.num_waits; ++k) {
    std::snprintf(one, sizeof one, "%swait s%p>=%llu", k ? " " : "", static_cast<const void*>(w.waits[k]),
                  static_cast<unsigned long long>(w.wait_values[k]));
    out += one;
  }
  return out;
}
}  // namespace

braid_backend_queue_t::braid_backend_queue_t(braid_backend_device_t& device, braid_queue_kind kind)
    : device_(device), kind_(kind) {
  const braid::cuda::DeviceGuard guard(device.ordinal());
  // Non-blocking: no implicit ordering with the legacy default stream that other libraries may use.
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cudaStreamCreate failed");
  }
  stream_ = braid::cuda::StreamHandle(device.ordinal(), stream);  // destroyed by the unwinding if we throw
  // std::thread throws std::system_error when no thread can be started. The submit thread may be
  // running by then, and a joinable std::thread destroyed by the unwinding would call std::terminate:
  // stop and join it before passing the failure on.
  try {
    submitter_ = std::thread([this] { submit_loop(); });
    completer_ = std::thread([this] { complete_loop(); });
  } catch (const std::system_error& e) {
    stop_submitter();
    throw std::system_error(e.code(), "cannot start a queue thread");
  } catch (...) {
    stop_submitter();
    throw;
  }
}

void braid_backend_queue_t::stop_submitter() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (submitter_.joinable()) submitter_.join();
}

braid_backend_queue_t::~braid_backend_queue_t() {
  // Every submission runs (or fails) and reports its end before the threads stop. Each thread first
  // drains on its own; one still busy after kCloseGrace may be stuck on a semaphore value nothing will
  // signal, so stop_waits_ then makes such waits give up (stream_wait polls it every 100 ms, and so
  // does the completion's wait for producers), failing that work. Bounded, yet what can finish does.
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (submit_exit_.wait_for(kCloseGrace) != std::future_status::ready) stop_waits_.store(true);
  if (submitter_.joinable()) submitter_.join();
  Completion last;
  last.stop = true;
  push_completion(std::move(last));
  if (complete_exit_.wait_for(kCloseGrace) != std::future_status::ready) stop_waits_.store(true);
  if (completer_.joinable()) completer_.join();
  const braid::cuda::DeviceGuard guard(device_.ordinal());
  cudaStreamSynchronize(stream_.get());
  if (blas_ != nullptr && device_.blas() != nullptr) device_.blas()->destroy(blas_);
  for (int i = 0; i < 2; ++i) {
    if (stage_[i] != nullptr) cudaFreeHost(stage_[i]);
    if (stage_ev_[i] != nullptr) cudaEventDestroy(stage_ev_[i]);
  }
  stream_.reset();
  cudaGetLastError();
}

bool braid_backend_queue_t::on_own_thread() const {
  auto me = std::this_thread::get_id();
  return me == submitter_.get_id() || me == completer_.get_id();
}

braid_status braid_backend_queue_t::submit(const braid_work& work, const char** why) {
  if (const char* bad = braid::plugin::check_work<braid_backend_buffer_t>(work)) {
    *why = bad;
    return BRAID_ERR_INVALID_ARGUMENT;
  }
  Submission s{};
  s.work = braid::plugin::copy_work(work);
  if (work.kind == BRAID_WORK_KERNEL) s.call = *work.kernel;
  if (work.kind == BRAID_WORK_COPY) s.copy = *work.copy;
  s.work.kernel = nullptr;  // the copies above are what the threads read
  s.work.copy = nullptr;
  if (work.kind == BRAID_WORK_KERNELS && !(work.token != nullptr && (work.flags & BRAID_WORK_PERSISTENT_DESCS))) {
    try {
      s.calls.assign(work.kernels, work.kernels + work.num_kernels);
    } catch (const std::bad_alloc&) {
      *why = "out of host memory copying kernel calls";
      return BRAID_ERR_OUT_OF_MEMORY;
    }
    s.work.kernels = nullptr;
  }
  {
    std::lock_guard lock(mu_);
    if (closing_) {
      *why = "queue is being destroyed";
      return BRAID_ERR_INVALID_STATE;
    }
    pending_.push_back(std::move(s));
  }
  cv_.notify_one();
  return BRAID_OK;
}

void braid_backend_queue_t::push_completion(Completion&& c) {
  {
    std::lock_guard lock(done_mu_);
    done_.push_back(std::move(c));
  }
  done_cv_.notify_one();
}

void braid_backend_queue_t::submit_loop() {
  cudaSetDevice(device_.ordinal());
  for (;;) {
    Submission s;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !pending_.empty(); });
      if (pending_.empty()) break;  // closing and drained
      s = std::move(pending_.front());
      pending_.pop_front();
    }
    if (tracing()) {
      char sem[32];
      std::snprintf(sem, sizeof sem, "s%p", static_cast<const void*>(s.work.signal));
      trace(this, "take", s.work.signal_value,
            std::string(sem) + " kind " + std::to_string(int(s.work.kind)) +
                (s.work.kind == BRAID_WORK_KERNEL ? std::string(" ") + braid::plugin::op_name(s.call.op) : "") + " " +
                waits_text(s.work));
    }
    Completion c;
    c.token = s.work.token;
    c.signal = s.work.signal;
    c.value = s.work.signal_value;
    for (uint32_t k = 0; k < s.work.num_waits; ++k)
      if (s.work.waits[k] != nullptr) c.waits[c.num_waits++] = {s.work.waits[k], s.work.wait_values[k]};
    try {
      run(s, c);
    } catch (const std::exception& e) {
      c.status = BRAID_ERR_INTERNAL;
      c.message = e.what();
    } catch (...) {
      c.status = BRAID_ERR_INTERNAL;
      c.message = "unknown exception";
    }
    push_completion(std::move(c));
  }
  submit_exited_.set_value();
}

void braid_backend_queue_t::run(Submission& s, Completion& c) {
  std::string why;
  if (device_.failed(&why)) {
    c.status = BRAID_ERR_DEVICE;
    c.message = "cuda device failed earlier: " + why;
    return;
  }
  for (uint32_t k = 0; k < s.work.num_waits; ++k) {
    if (s.work.waits[k] == nullptr) continue;
    if (tracing()) {
      uint64_t now = 0;
      s.work.waits[k]->query(&now);
      char what[96];
      std::snprintf(what, sizeof what, "s%p>=%llu (at %llu)", static_cast<const void*>(s.work.waits[k]),
                    static_cast<unsigned long long>(s.work.wait_values[k]), static_cast<unsigned long long>(now));
      trace(this, "stream_wait", c.value, what);
    }
    braid_status st = s.work.waits[k]->stream_wait(stream(), s.work.wait_values[k], stop_waits_);
    if (st != BRAID_OK) {
      c.status = st;
      c.message = st == BRAID_ERR_INVALID_STATE && stop_waits_.load()
                      ? "queue destroyed while this work waited for a semaphore value nothing had recorded"
                      : "a semaphore this work waits on failed";
      return;
    }
  }
  if (tracing()) trace(this, "waits met", c.value);
  if (s.work.kind == BRAID_WORK_KERNEL) {
    c.op = s.call.op;
    c.status = launch(s.call, c.flag, c.message);
  } else if (s.work.kind == BRAID_WORK_KERNELS) {
    run_kernels(s, c);
  } else if (s.work.kind == BRAID_WORK_COPY) {
    c.status = braid::cuda::run_copy(*this, s.copy, c.message);
  }
  // One event marks the end of this work on the stream: the completion thread waits on it and device
  // waiters (other queues) wait on it through the semaphore.
  c.event = device_.events()->get();
  if (c.event != nullptr && cudaEventRecord(c.event, stream()) != cudaSuccess) {
    cudaError_t e = cudaGetLastError();
    device_.events()->put(c.event);
    c.event = nullptr;
    if (c.status == BRAID_OK) {
      c.status = BRAID_ERR_DEVICE;
      c.message = std::string("cudaEventRecord: ") + cudaGetErrorString(e);
    }
  }
  if (c.event != nullptr && c.signal != nullptr)
    c.event_in_semaphore = c.signal->add_event(c.value, c.event, device_.events());
  if (tracing()) trace(this, "launched", c.value, "status " + std::to_string(int(c.status)) + " " + c.message);
  if (c.event == nullptr) {
    // No event to mark the end (pool empty and creation failed, or the record failed): the completion
    // must not be announced before the work ends, or its buffers would be freed under it. Wait here.
    if (const cudaError_t e = cudaStreamSynchronize(stream()); e != cudaSuccess) {
      cudaGetLastError();
      const std::string why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      device_.set_failed(why);
      if (c.status == BRAID_OK) {
        c.status = BRAID_ERR_KERNEL;
        c.message = why;
      }
    } else if (c.status == BRAID_OK && c.message.empty()) {
      braid::cuda::host::log(BRAID_LOG_WARNING, "no CUDA event available; the queue synchronised instead");
    }
  }
}

braid_status braid_backend_queue_t::launch(const braid_kernel_call& call, int& flag, std::string& message) {
  // Launchers read cudaGetLastError() after their launch: an error an earlier runtime call on this
  // thread left behind (a failed cuBLAS or NVRTC-library call) must not be taken for this kernel's.
  // A sticky error (a faulted context) is returned again by the launch itself.
  (void)cudaGetLastError();
  braid::cuda::KernelEnv env;
  env.stream = stream();
  env.device = &device_;
  env.blas = device_.blas();
  env.blas_why = device_.blas_why();
  if (call.op == BRAID_KOP_MATMUL && env.blas != nullptr && blas_ == nullptr) {
    if (env.blas->create(&blas_) != CUBLAS_STATUS_SUCCESS) {
      blas_ = nullptr;
    } else {
      env.blas->set_stream(blas_, stream());
      env.blas->set_math_mode(blas_, device_.tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    }
  }
  env.blas_handle = blas_;
  flag = -1;
  if (braid::cuda::needs_error_flag(call)) {
    // A checked kernel never runs unchecked: the flag pool grows as needed, and only when no pinned
    // memory is left for it does the kernel fail instead of running.
    flag = device_.acquire_flag();
    if (flag < 0) {
      message = std::string(braid::plugin::op_name(call.op)) + ": no pinned memory left for its error flag";
      return BRAID_ERR_OUT_OF_MEMORY;
    }
    env.error_flag = device_.flag_ptr(flag);
  }
  return braid::cuda::launch_kernel(call, env, message);
}

// The calls in order on the stream (stream order makes each see the writes of those before it). A
// call's error flag is only known once it has run: for a checked call that is not the last, this
// thread waits for the stream and reads the flag before launching the rest, so that the calls after a
// failed one never run. The last call's flag goes to the completion thread, as a single kernel's.
void braid_backend_queue_t::run_kernels(const Submission& s, Completion& c) {
  const braid_kernel_call* calls = s.calls.empty() ? s.work.kernels : s.calls.data();
  const uint32_t n = s.work.num_kernels;
  for (uint32_t k = 0; k < n; ++k) {
    const braid_kernel_call& call = calls[k];
    int flag = -1;
    std::string message;
    braid_status st = launch(call, flag, message);
    if (st == BRAID_OK && flag >= 0 && k + 1 < n) {
      if (const cudaError_t e = cudaStreamSynchronize(stream()); e != cudaSuccess) {
        cudaGetLastError();
        message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        device_.set_failed(message);
        st = BRAID_ERR_KERNEL;
      } else if (const int code = *device_.flag_ptr(flag); code != 0) {
        message = braid::cuda::kernel_error_text(code);
        st = BRAID_ERR_KERNEL;
      }
      device_.release_flag(flag);
      flag = -1;
    }
    if (st != BRAID_OK) {
      c.status = st;
      c.message = braid::plugin::kernels_call_message(k, n, call.op, message);
      c.flag = flag;  // released by the completion thread once the work has ended
      return;
    }
    if (flag >= 0) {  // the last call: read when the work has ended
      c.flag = flag;
      c.op = call.op;
      c.flag_call = k;
      c.num_calls = n;
    }
  }
}

void braid_backend_queue_t::complete_loop() {
  cudaSetDevice(device_.ordinal());
  for (;;) {
    Completion c;
    {
      std::unique_lock lock(done_mu_);
      done_cv_.wait(lock, [&] { return !done_.empty(); });
      c = std::move(done_.front());
      done_.pop_front();
    }
    if (c.stop) break;
    if (tracing()) trace(this, "completing", c.value);
    if (c.event != nullptr) {
      cudaError_t e = cudaEventSynchronize(c.event);  // blocking-sync event: sleeps, no spinning
      if (e != cudaSuccess) {
        // An error while running (illegal address, launch failure...) corrupts the context: sticky.
        cudaGetLastError();
        std::string why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        device_.set_failed(why);
        if (c.status == BRAID_OK) {
          c.status = BRAID_ERR_KERNEL;
          c.message = why;
        }
      }
    }
    if (c.flag >= 0) {
      const int code = *device_.flag_ptr(c.flag);
      if (code != 0 && c.status == BRAID_OK) {
        c.status = BRAID_ERR_KERNEL;
        c.message = c.num_calls != 0
                        ? braid::plugin::kernels_call_message(c.flag_call, c.num_calls, c.op,
                                                              braid::cuda::kernel_error_text(code))
                        : std::string(braid::plugin::op_name(c.op)) + ": " + braid::cuda::kernel_error_text(code);
      }
      device_.release_flag(c.flag);
    }
    // A wait on another queue was resolved on the GPU, so this work may end before the host has seen
    // its producer end. Wait for the producers' semaphores here (they are reached or about to be), so
    // the engine sees a failed producer before this work's end and the failure is inherited, never
    // lost (as the Vulkan queue does). While the queue closes, waits nobody will satisfy are skipped.
    for (uint32_t k = 0; k < c.num_waits; ++k) {
      braid_status st = BRAID_ERR_TIMEOUT;
      while (st == BRAID_ERR_TIMEOUT && !stop_waits_.load())
        st = c.waits[k].first->wait(c.waits[k].second, 100'000'000);  // 100 ms, then check for close
      if (st != BRAID_OK && st != BRAID_ERR_TIMEOUT && c.status == BRAID_OK) {
        c.status = st;
        c.message = "a semaphore this work waited on failed";
      }
    }
    if (tracing()) trace(this, "work_end", c.value, "status " + std::to_string(int(c.status)));
    braid::cuda::host::work_end(c.token, c.status, c.message.empty() ? nullptr : c.message.c_str());
    if (tracing()) trace(this, "signal", c.value);
    if (c.signal != nullptr) c.signal->signal(c.value);  // recycles the event if it holds it
    if (c.event != nullptr && !c.event_in_semaphore) device_.events()->put(c.event);
  }
  complete_exited_.set_value();
}

bool braid_backend_queue_t::staging(void* (&buf)[2], cudaEvent_t (&ev)[2]) {
  for (int i = 0; i < 2; ++i) {
    if (stage_[i] == nullptr && cudaHostAlloc(&stage_[i], kStageBytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      stage_[i] = nullptr;
      return false;
    }
    if (stage_ev_[i] == nullptr &&
        cudaEventCreateWithFlags(&stage_ev_[i], cudaEventDisableTiming | cudaEventBlockingSync) != cudaSuccess) {
      cudaGetLastError();
      stage_ev_[i] = nullptr;
      return false;
    }
    buf[i] = stage_[i];
    ev[i] = stage_ev_[i];
  }
  return true;
}
