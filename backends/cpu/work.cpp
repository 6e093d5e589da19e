#include "work.h"
#include "fork_guard.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "device.h"
#include "host.h"
#include "kernels/kernels.h"
#include "timeline_semaphore.h"
#include "work_checks.h"

namespace braid::cpu {
namespace {

// Below this a copy is one memcpy on the queue thread; above it, chunks of kCopyGrain bytes go to the
// arena's cores, since one core cannot saturate memory bandwidth.
constexpr int64_t kCopyGrain = int64_t{1} << 20;

void run_copy(const braid_copy_desc& c, braid_backend_device_t& device) {
  if (c.bytes == 0) return;
  const std::byte* src =
      c.src_buffer != nullptr ? c.src_buffer->data + c.src_offset : static_cast<const std::byte*>(c.src_host);
  std::byte* dst = c.dst_buffer != nullptr ? c.dst_buffer->data + c.dst_offset : static_cast<std::byte*>(c.dst_host);
  const auto n = static_cast<size_t>(c.bytes);
  if (src == dst) return;
  auto s = reinterpret_cast<uintptr_t>(src);
  auto d = reinterpret_cast<uintptr_t>(dst);
  if (s < d + n && d < s + n) {  // overlapping ranges of one buffer: only memmove is correct
    std::memmove(dst, src, n);
    return;
  }
  if (device.exec().concurrency() == 1 || c.bytes < 2 * static_cast<uint64_t>(kCopyGrain)) {
    std::memcpy(dst, src, n);
    return;
  }
  device.exec().parallel_for(static_cast<int64_t>(n), kCopyGrain,
                             [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, static_cast<size_t>(e - b)); });
}

// Error paths must not allocate unguarded (they run in noexcept code, possibly out of memory): fixed
// messages are static strings, and composed ones fall back to a static string if composing fails.
struct Outcome {
  braid_status status = BRAID_OK;
  const char* fixed = nullptr;
  std::string composed;

  void set(braid_status s, const char* message) {
    status = s;
    fixed = message;
  }
  template <typename Compose>
  void set(braid_status s, const char* fallback, Compose&& compose) {
    set(s, fallback);
    try {
      composed = compose();
      fixed = nullptr;
    } catch (...) {}
  }
  const char* message() const { return status == BRAID_OK ? nullptr : fixed != nullptr ? fixed : composed.c_str(); }
};

Outcome run_payload(const WorkItem& item, braid_backend_device_t& device) noexcept {
  Outcome out;
  try {
    if (item.kind == BRAID_WORK_KERNEL || item.kind == BRAID_WORK_KERNELS) {
      // In order, each call seeing its predecessors' writes (one thread runs them); the first failure
      // ends the submission, the calls after it skipped.
      for (uint32_t k = 0; k < item.num_calls; ++k) {
        const braid_kernel_call& call = item.calls[k];
        KernelResult r;
        {
          BlasSection no_fork(call.op == BRAID_KOP_MATMUL || call.op == BRAID_KOP_CONV2D);
          // Not inside arena.execute: entering the arena wakes TBB's workers even for a 2-element add.
          // Exec::parallel_for enters it only when a kernel actually fans out.
          r = run_kernel(call, device.exec());
        }
        if (r.status == BRAID_OK) continue;
        if (item.kind == BRAID_WORK_KERNELS) {
          // Composing may fail for memory: then the call's own message (or a fixed one) stands.
          const char* fallback = "a call of a kernels submission failed";
          out.set(r.status, fallback, [&] {
            return plugin::kernels_call_message(k, item.num_calls, call.op,
                                                r.message.empty() ? "kernel failed" : r.message);
          });
          if (out.fixed == fallback && !r.message.empty()) {
            out.composed = std::move(r.message);
            out.fixed = nullptr;
          }
        } else if (r.message.empty()) {
          out.set(r.status, "kernel failed");
        } else {
          out.status = r.status;
          out.composed = std::move(r.message);
        }
        break;
      }
    } else if (item.kind == BRAID_WORK_COPY) {
      run_copy(item.copy, device);
    }
  } catch (const std::bad_alloc&) {
    out.set(BRAID_ERR_OUT_OF_MEMORY, "out of memory while running work");
  } catch (const std::exception& e) {
    out.set(BRAID_ERR_INTERNAL, "exception while running work",
            [&] { return std::string("exception while running work: ") + e.what(); });
  } catch (...) {
    out.set(BRAID_ERR_INTERNAL, "unknown exception while running work");
  }
  return out;
}

// Copies the header, the views in use and the attributes; the unused view slots are left alone.
void copy_kernel_call(const braid_kernel_call& from, braid_kernel_call& to) noexcept {
  to.struct_size = sizeof to;
  to.op = from.op;
  to.num_inputs = from.num_inputs;
  to.num_outputs = from.num_outputs;
  std::copy_n(from.inputs, from.num_inputs, to.inputs);
  std::copy_n(from.outputs, from.num_outputs, to.outputs);
  std::copy(std::begin(from.i), std::end(from.i), to.i);
  std::copy(std::begin(from.f), std::end(from.f), to.f);
}

}  // namespace

void WorkItem::take(WorkItem& o) noexcept {
  kind = o.kind;
  num_waits = o.num_waits;
  std::copy_n(o.waits.begin(), o.num_waits, waits.begin());
  std::copy_n(o.wait_values.begin(), o.num_waits, wait_values.begin());
  signal = o.signal;
  signal_value = o.signal_value;
  token = o.token;
  num_calls = o.num_calls;
  calls = o.calls;
  owned_calls = std::move(o.owned_calls);
  if (kind == BRAID_WORK_COPY) copy = o.copy;
}

braid_status make_work_item(const braid_work& work, WorkItem& out, const char** why) noexcept {
  if (const char* bad = plugin::check_work<braid_backend_buffer_t>(work)) {
    *why = bad;
    return BRAID_ERR_INVALID_ARGUMENT;
  }
  switch (work.kind) {  // a known kind: check_work refused the rest
    case BRAID_WORK_KERNEL:
    case BRAID_WORK_KERNELS: {
      const bool many = work.kind == BRAID_WORK_KERNELS;
      const braid_kernel_call* from = many ? work.kernels : work.kernel;
      out.kind = work.kind;
      out.num_calls = many ? work.num_kernels : 1;
      if (work.token != nullptr && (work.flags & BRAID_WORK_PERSISTENT_DESCS)) {
        out.calls = from;
      } else {
        try {
          out.owned_calls = std::make_unique_for_overwrite<braid_kernel_call[]>(out.num_calls);
        } catch (const std::bad_alloc&) {
          *why = "out of host memory copying kernel calls";
          return BRAID_ERR_OUT_OF_MEMORY;
        }
        for (uint32_t k = 0; k < out.num_calls; ++k) copy_kernel_call(from[k], out.owned_calls[k]);
        out.calls = out.owned_calls.get();
      }
      break;
    }
    case BRAID_WORK_COPY: {
      out.kind = BRAID_WORK_COPY;
      out.copy = *work.copy;
      break;
    }
    case BRAID_WORK_MARKER: out.kind = BRAID_WORK_MARKER; break;
  }
  out.num_waits = work.num_waits;
  for (uint32_t i = 0; i < work.num_waits; ++i) {
    out.waits[i] = work.waits[i];
    out.wait_values[i] = work.wait_values[i];
  }
  out.signal = work.signal;
  out.signal_value = work.signal_value;
  out.token = work.token;
  return BRAID_OK;
}

void run_work_item(const WorkItem& item, braid_backend_device_t& device) noexcept {
  Outcome outcome;
  // Blocking here models a device queue stalled on a semaphore: nothing behind this item may start.
  for (uint32_t i = 0; i < item.num_waits; ++i) {
    braid_status s = item.waits[i]->wait(item.wait_values[i], UINT64_MAX);
    if (s != BRAID_OK) {
      outcome.set(s, "a semaphore this work waited on has failed",
                  [s] { return "a semaphore this work waited on has failed (status " + std::to_string(s) + ")"; });
      break;
    }
  }
  if (outcome.status == BRAID_OK) {
    // A skip means the host already knows why (an input failed earlier): we report BRAID_OK, i.e.
    // "nothing went wrong here", and leave its status in charge.
    bool run = item.token == nullptr || host::work_begin(item.token);
    if (run) outcome = run_payload(item, device);
  }
  // work_end before the signal, so anyone woken by the semaphore sees the host's bookkeeping done.
  if (item.token != nullptr) host::work_end(item.token, outcome.status, outcome.message());
  if (item.signal == nullptr) return;
  // Without a token the host hears of nothing, so the semaphore is the only channel left to carry the
  // failure; with one, the host has the error from work_end and the timeline keeps moving.
  if (outcome.status != BRAID_OK && item.token == nullptr) {
    item.signal->fail(outcome.status);
    return;
  }
  try {
    item.signal->signal(item.signal_value);
  } catch (...) {
    // Signalling only allocates to collect due notifications; failing keeps waiters from hanging.
    item.signal->fail(BRAID_ERR_OUT_OF_MEMORY);
  }
}

}  // namespace braid::cpu
