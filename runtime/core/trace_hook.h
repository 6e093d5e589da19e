// The hook through which graph mode sees what the calling thread runs while it traces
// (docs/GRAPH.md). It lives in core/ because the layers that act (context allocates storages, ops push
// kernels, tensor uploads) sit below graph/, which implements it: they call the hook, never the graph.
// The hook is per thread, so tracing on one thread never captures another thread's ops.
#pragma once
#include <cstdint>
#include <span>

#include "braid_backend.h"

struct braid_tensor_t;

namespace braid {

struct Storage;

// One kernel as OpBuilder pushes it: the call (views into the operands' storages), the operand
// tensors in kernel input order, the output tensors in kernel output order, and every storage the op
// writes (outputs and kernel-side in-place updates such as batch norm's running statistics).
struct TracedKernel {
  const char* name;
  braid_kernel_op kop;
  const braid_kernel_call* call;
  std::span<braid_tensor_t* const> operands;
  std::span<braid_tensor_t* const> outputs;
  std::span<Storage* const> writes;
};

class TraceHook {
 public:
  virtual ~TraceHook() = default;
  // A storage was created (a new tensor, or a released one taken over): it did not exist before.
  virtual void created(Storage& storage) = 0;
  // A kernel was pushed (before the push, with the call complete).
  virtual void kernel(const TracedKernel& k) = 0;
  // Work that is not a kernel wrote `dst` (an upload from the host, a copy between devices). `src` is
  // what it copied from, or null for host data.
  virtual void untraced_write(Storage& dst, Storage* src) = 0;
  // y is a new handle over x's storage (reshape): no kernel runs.
  virtual void reshaped(braid_tensor_t& x, braid_tensor_t& y) = 0;
  // Whether the kernels seen also run. A trace that only records (a hybrid function's first call,
  // whose graph then runs) skips them, so no value it computes can be read while it traces.
  virtual bool runs_kernels() const noexcept = 0;
};

// The calling thread's hook, null when it does not trace (one thread-local load per op otherwise).
inline thread_local TraceHook* t_trace_hook = nullptr;

// Stops the calling thread's trace for a scope: what runs meanwhile runs now, for real, and the graph
// sees none of it (state a step keeps across runs, such as an optimizer's momentum, made on first use).
class TracePause {
 public:
  TracePause() noexcept : saved_(t_trace_hook) { t_trace_hook = nullptr; }
  ~TracePause() { t_trace_hook = saved_; }
  TracePause(const TracePause&) = delete;
  TracePause& operator=(const TracePause&) = delete;

 private:
  TraceHook* saved_;
};

// Whether the calling thread records kernels without running them.
inline bool recording_without_running() noexcept {
  const TraceHook* hook = t_trace_hook;
  return hook != nullptr && !hook->runs_kernels();
}

}  // namespace braid
