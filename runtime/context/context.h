// The context behind braid_context: the loaded backends, their opened devices, the engine, the
// profiler and the RNG counter. Everything mutable in braid lives in a context, except the few facts
// that belong to the process (the fork generation, the handle pools, the log sink: the list is in
// docs/ARCHITECTURE.md, "Process-wide state").
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "context/recording.h"
#include "core/handle_pool.h"
#include "device/device.h"
#include "engine/engine.h"
#include "plugin/backend.h"
#include "profiler/profiler.h"

namespace braid {
class TensorPool;
}

struct braid_context_t {
  std::atomic<int32_t> refs{1};  // every holder's: the application's and its tensors' (ContextRef)
  // The application's own references (braid_context_retain/_release), a part of refs: a release
  // beyond them is refused instead of taking a reference a live tensor holds (a second release of
  // one handle tore the context down under its tensors).
  std::atomic<int32_t> app_refs{1};
  uint64_t fork_generation = 0;

  std::vector<std::unique_ptr<braid::Backend>> backends;
  std::vector<std::unique_ptr<braid::Device>> devices;
  std::vector<braid::EngineDevice*> device_list;  // the same, as the engine sees them (its waits)
  // Engine devices that a layer above adds for its own queues (a process group's communication queue,
  // runtime/distributed): braid_wait_all and the context's release wait for their work too.
  std::mutex aux_mu;
  std::vector<braid::EngineDevice*> aux_devices;  // guarded by aux_mu
  braid::Profiler profiler;
  std::unique_ptr<braid::Engine> engine;
  braid::InflightBound inflight_bound{0, 0};  // the application's (0: each device's default)
  int32_t compute_queues = 1;                 // per device (options.compute_queues)
  // BRAID_ALLREDUCE, read with the other variables when the context is made: the algorithm AUTO runs.
  braid_allreduce_algorithm allreduce_override = BRAID_ALLREDUCE_AUTO;
  // The tensor handles (tensor/tensor.h), made by the tensor layer on first use: this layer, below
  // it, only names the pool.
  std::once_flag tensors_made;
  std::shared_ptr<braid::TensorPool> tensors;
  std::string plugin_path;       // folders searched for plugins after libbraid's own (BRAID_BACKEND_PATH)
  std::string profile_path;      // written when the context is destroyed
  bool profile_written = false;  // write_profile ran (release_context calls it before the destructor)
  std::atomic<uint64_t> seed{0};
  std::atomic<uint64_t> rng_draw{0};
  braid::autograd::Recording recording;  // autograd's per-thread switch
  // Unique for the process's lifetime (a context made at a dead one's address has another): what
  // per-thread settings kept outside the context (ops/amp.cpp, autocast) are keyed by.
  const uint64_t serial = next_serial();

  explicit braid_context_t(const braid_context_options& options);
  ~braid_context_t();
  braid_context_t(const braid_context_t&) = delete;
  braid_context_t& operator=(const braid_context_t&) = delete;
  static uint64_t next_serial() noexcept {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  braid::Device& device(braid_device index, const char* what);
  // device_list and aux_devices: everything a wait for all work waits for.
  std::vector<braid::EngineDevice*> engine_devices();
  // Waits for all work, then writes the configured profile (once). Returns why it could not be
  // written, "" when it was or none is configured. The destructor cannot report, so the release that
  // destroys the context calls this first and returns the error to the application.
  std::string write_profile() noexcept;
  // The devices and their queues as the profile names them (write_profile, braid_profiler_stop).
  std::vector<braid::ProfileDevice> profile_devices() const;

 private:
  void open_devices(braid::Backend& backend);
  void close_devices() noexcept;
};

namespace braid {
using Context = ::braid_context_t;
// Where contexts live and how a stale handle is told apart (core/handle_pool.h).
using ContextPool = HandlePool<Context>;

// Throws BRAID_ERR_INVALID_STATE if the context was created before a fork() in this process.
void check_fork(const Context& ctx);
// Drops one reference; the last one destroys the context. Returns why the configured profile could
// not be written when this call destroyed the context (else ""): callers at the C boundary report it
// as BRAID_ERR_IO, after everything has been released.
std::string release_context(Context* ctx) noexcept;

// One context reference held for a scope (or an object's lifetime): what it uses stays alive when
// another thread releases the application's last reference meanwhile; the context is destroyed when
// this one goes, if it was the last.
class ContextRef {
 public:
  explicit ContextRef(Context& c) : ctx_(&c) { c.refs.fetch_add(1); }
  // Takes over a reference the caller already took.
  static ContextRef adopt(Context& c) noexcept { return ContextRef(&c); }
  ContextRef(ContextRef&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
  ContextRef(const ContextRef&) = delete;
  ContextRef& operator=(const ContextRef&) = delete;
  ~ContextRef() {
    if (ctx_) (void)release_context(ctx_);
  }

  Context& operator*() const noexcept { return *ctx_; }
  Context* operator->() const noexcept { return ctx_; }

 private:
  explicit ContextRef(Context* adopted) noexcept : ctx_(adopted) {}
  Context* ctx_;
};

// Validates a context handle from the application (NULL, released, created before fork()) without
// reading a released one, and holds it for the caller's scope: another thread's release of the last
// reference meanwhile cannot destroy the context under the call (a call that made the context's first
// tensor as the last one was released revived a context being destroyed; seen under TSan). A context
// whose last reference is being dropped is refused like a released one.
[[nodiscard]] ContextRef use_context(braid_context ctx, const char* what);
}  // namespace braid
