#include "context/context.h"

#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

#include "core/dtype.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/trace_hook.h"

namespace braid {
namespace {

// Process-wide state (docs/ARCHITECTURE.md, "Process-wide state" lists the rest): how many fork()s
// this process has seen. A context remembers the
// generation it was created in; after fork() the child's copy has no threads behind it, so it is
// refused, and the child creates a fresh context (docs/ENGINE.md#waits-from-engine-threads-and-fork).
std::atomic<uint64_t> g_fork_generation{0};

void register_fork_handler() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); }); });
}

// A reference on a context that still has one (refs above 0): one being released is left alone.
bool try_retain(Context& ctx) {
  int32_t refs = ctx.refs.load();
  while (refs > 0)
    if (ctx.refs.compare_exchange_weak(refs, refs + 1)) return true;
  return false;
}

// At exit(), the work still queued on live contexts runs to its end before the libraries' own
// destructors run: a CPU worker was still inside OpenBLAS while OpenBLAS's destructor freed its
// buffers (a crash at exit of a program that queued matmuls and did not wait). The contexts themselves
// stay: the application may still hold and release them.
void finish_queued_work_at_exit() {
  const std::vector<Context*> live = ContextPool::instance().select_live(try_retain);
  for (Context* ctx : live) {
    // (From an engine thread the wait is refused at once rather than wait for itself.)
    if (ctx->fork_generation == g_fork_generation.load()) (void)ctx->engine->wait_idle(ctx->engine_devices());
    (void)release_context(ctx);
  }
}

// exit() runs atexit handlers and C++ static destructors together, newest registration first. A
// library's static objects register their destructors as the library is loaded, so the handler is
// registered after the plugins are loaded and their devices opened (which loads OpenBLAS and oneDNN),
// and again whenever a later context maps a plugin for the first time (one unloaded with an earlier
// context is loaded afresh): registered before them, it ran after oneDNN's destructors, and a worker
// that then entered oneDNN for queued work crashed. Running the handler twice is harmless: each run
// waits for whatever work is still queued.
void register_exit_handler(bool plugins_newly_mapped) {
  static std::mutex mu;
  static bool registered = false;
  const std::lock_guard lock(mu);
  if (registered && !plugins_newly_mapped) return;
  (void)std::atexit(finish_queued_work_at_exit);
  registered = true;
}

}  // namespace

void check_fork(const Context& ctx) {
  if (ctx.fork_generation != g_fork_generation.load(std::memory_order_relaxed))
    fail(BRAID_ERR_INVALID_STATE, "this context was created before fork(); create a new context in the child process");
}

ContextRef use_context(braid_context ctx, const char* what) {
  ContextRef held = ContextRef::adopt(ContextPool::instance().checked_retained(ctx, what, "context", try_retain));
  check_fork(*held);
  return held;
}

}  // namespace braid

using namespace braid;

braid_context_t::braid_context_t(const braid_context_options& o) {
  register_fork_handler();
  fork_generation = g_fork_generation.load();

  if (std::string why = log_env_error(); !why.empty()) fail(BRAID_ERR_INVALID_ARGUMENT, why);
  EngineOptions eo;
  int32_t mode = enum_int(o.engine_mode);
  if (mode == BRAID_ENGINE_DEFAULT) {
    const char* e = env("BRAID_ENGINE");
    if (e && std::strcmp(e, "sync") != 0 && std::strcmp(e, "async") != 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "BRAID_ENGINE='", e, "' is neither 'sync' nor 'async'");
    mode = e && std::strcmp(e, "sync") == 0 ? BRAID_ENGINE_SYNC : BRAID_ENGINE_ASYNC;
  }
  if (mode != BRAID_ENGINE_ASYNC && mode != BRAID_ENGINE_SYNC)
    fail(BRAID_ERR_INVALID_ARGUMENT, "options.engine_mode ", mode, " is not a braid_engine_mode");
  eo.sync = mode == BRAID_ENGINE_SYNC;
  // 0 here means each device's own default (default_inflight_bound), chosen as it opens.
  inflight_bound.ops = o.max_inflight_ops ? o.max_inflight_ops
                                          : env_u64("BRAID_MAX_INFLIGHT_OPS", 0, "a number of ops (0: the default)");
  inflight_bound.bytes = o.max_inflight_bytes
                             ? o.max_inflight_bytes
                             : env_u64("BRAID_MAX_INFLIGHT_BYTES", 0, "a number of bytes (0: the device's default)");
  compute_queues = o.compute_queues;
  if (compute_queues == 0)
    compute_queues = static_cast<int32_t>(env_u64("BRAID_COMPUTE_QUEUES", 1, "a number of compute queues per device"));
  if (compute_queues < 1 || compute_queues > 16)
    fail(BRAID_ERR_INVALID_ARGUMENT, "compute queues per device must be 1 to 16, not ", compute_queues,
         " (options.compute_queues or BRAID_COMPUTE_QUEUES)");
  if (const char* a = env("BRAID_ALLREDUCE")) {
    const std::string_view s(a);
    const std::pair<std::string_view, braid_allreduce_algorithm> names[] = {
        {"auto", BRAID_ALLREDUCE_AUTO}, {"naive", BRAID_ALLREDUCE_NAIVE},   {"tree", BRAID_ALLREDUCE_TREE},
        {"ring", BRAID_ALLREDUCE_RING}, {"biring", BRAID_ALLREDUCE_BIRING}, {"direct", BRAID_ALLREDUCE_DIRECT}};
    const auto* found = std::find_if(std::begin(names), std::end(names), [&](const auto& n) { return n.first == s; });
    if (found == std::end(names))
      fail(BRAID_ERR_INVALID_ARGUMENT, "BRAID_ALLREDUCE='", s,
           "' is not one of auto, naive, tree, ring, biring, direct");
    allreduce_override = found->second;
  }
  engine = std::make_unique<Engine>(eo, profiler);
  seed = o.seed ? o.seed : env_u64("BRAID_SEED", 0, "a seed");
  if (o.profile_path)
    profile_path = o.profile_path;
  else if (const char* p = env("BRAID_PROFILE"))
    profile_path = p;

  PluginSearch search;
  if (o.backends)
    search.only = split_list(o.backends);
  else if (const char* b = env("BRAID_BACKENDS"))
    search.only = split_list(b);
  if (o.backend_path)
    search.extra_path = o.backend_path;
  else if (const char* p = env("BRAID_BACKEND_PATH"))
    search.extra_path = p;
  plugin_path = search.extra_path;
  backends = load_backends(search, Engine::host_api());
  try {
    for (auto& b : backends)
      if (b->loaded) open_devices(*b);
  } catch (...) {
    close_devices();
    throw;
  }
  register_exit_handler(std::any_of(backends.begin(), backends.end(), [](const auto& b) { return b->newly_mapped; }));
  if (!profile_path.empty()) profiler.start();
}

void braid_context_t::open_devices(Backend& b) {
  const braid_backend_api* api = b.api;
  int32_t opened = 0;
  for (int32_t i = 0; i < b.device_count; ++i) {
    auto d = std::make_unique<Device>();
    d->backend = &b;
    d->api = api;
    d->backend_index = i;
    d->props.struct_size = sizeof d->props;
    braid_status st = api->device_props(i, &d->props);
    if (st == BRAID_OK) st = api->device_open(i, &d->handle);
    if (st != BRAID_OK) {
      b.reason = cat("device ", i, " failed to open: ", status_name(st));
      continue;
    }
    d->index = static_cast<int32_t>(devices.size());
    d->id = cat(b.name, ":", i);
    const InflightBound fallback = default_inflight_bound(d->props.kind);
    d->inflight_bound = {inflight_bound.ops ? inflight_bound.ops : fallback.ops,
                         inflight_bound.bytes ? inflight_bound.bytes : fallback.bytes};
    using PropsJsonFn = const char* (*)(int32_t);
    if (auto props_json = b.function_at<PropsJsonFn>(offsetof(braid_backend_api, device_props_json)))
      if (const char* json = props_json(i); json != nullptr && *json != '\0') d->props_json = json;
    Device* dev = d.get();
    devices.push_back(std::move(d));
    device_list.push_back(dev);
    for (int32_t k = 1; k < compute_queues; ++k) dev->more_compute.push_back(std::make_unique<Queue>());
    for (int32_t t = 0; Queue * q : dev->queues()) {
      q->device = dev;
      q->kind = q == &dev->transfer ? BRAID_QUEUE_TRANSFER : BRAID_QUEUE_COMPUTE;
      q->track = t++;
      if (api->queue_create(dev->handle, q->kind, &q->handle) != BRAID_OK ||
          api->semaphore_create(dev->handle, 0, &q->timeline) != BRAID_OK)
        fail(BRAID_ERR_DEVICE, "cannot create the queues of ", dev->id);
    }
    dev->allocator = std::make_unique<CachingAllocator>(
        [api, h = dev->handle](uint64_t bytes, braid_backend_buffer* out) { return api->buffer_alloc(h, bytes, out); },
        [api, h = dev->handle](braid_backend_buffer buf) { api->buffer_free(h, buf); },
        [this, dev] { engine->drain(*dev); });
    ++opened;
  }
  b.device_count = opened;
}

void braid_context_t::close_devices() noexcept {
  for (auto& d : devices) {
    const braid_backend_api* api = d->api;
    for (Queue* q : d->queues()) {
      if (q->handle) api->queue_destroy(q->handle);  // drains: no work can still reference memory
      q->handle = nullptr;
    }
    for (Queue* q : d->queues()) {
      if (q->timeline) api->semaphore_destroy(q->timeline);
      q->timeline = nullptr;
    }
    d->allocator.reset();
    if (d->handle) api->device_close(d->handle);
    d->handle = nullptr;
  }
  devices.clear();
  device_list.clear();
}

braid_context_t::~braid_context_t() {
  if (fork_generation != g_fork_generation.load()) {
    // A child after fork(): the threads behind this context do not exist here. Leak it rather than
    // join threads that will never answer.
    for (auto& d : devices) (void)d.release();
    for (auto& b : backends) (void)b.release();
    (void)engine.release();
    return;
  }
  (void)write_profile();  // a no-op when release_context already did it and reported the result
  close_devices();
  backends.clear();
}

Device& braid_context_t::device(braid_device index, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= devices.size())
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": device index ", index, " out of range (", devices.size(), " devices)");
  return *devices[static_cast<size_t>(index)];
}

// The trace's view of the devices: names and queue tracks, so the profiler (a layer below the
// devices) needs nothing of Device.
std::vector<EngineDevice*> braid_context_t::engine_devices() {
  std::vector<EngineDevice*> all = device_list;
  const std::lock_guard lock(aux_mu);
  all.insert(all.end(), aux_devices.begin(), aux_devices.end());
  return all;
}

std::vector<braid::ProfileDevice> braid_context_t::profile_devices() const {
  std::vector<braid::ProfileDevice> all;
  for (const auto& d : devices) {
    braid::ProfileDevice& p = all.emplace_back();
    // props.name comes from the plugin: bounded, in case it is not NUL-terminated.
    const std::string_view model(d->props.name, strnlen(d->props.name, sizeof d->props.name));
    p.name = braid::cat(d->id, " (", model, ")");
    for (const braid::Queue* q : d->queues()) p.queues.push_back({q, q->track, braid::Device::queue_name(q->track)});
  }
  return all;
}

std::string braid_context_t::write_profile() noexcept {
  if (profile_written || fork_generation != g_fork_generation.load()) return {};
  profile_written = true;
  (void)engine->wait_idle(engine_devices());  // recorded work must have its end times
  if (profile_path.empty()) return {};
  try {
    profiler.write(profile_path, profile_devices());
    return {};
  } catch (const std::exception& e) {
    try {
      return e.what();
    } catch (...) {
      return {};  // no memory even for the message: nothing better to report
    }
  }
}

namespace braid {
std::string release_context(Context* ctx) noexcept {
  if (ctx->refs.fetch_sub(1) != 1) return {};
  // Out of the live set first: from here a call with this handle is refused, not served by a context
  // being torn down.
  ContextPool::Owned owned = ContextPool::instance().retire(ctx);
  if (!owned) return {};  // not a live handle: a racing release already owns the teardown
  std::string error = owned->write_profile();
  owned.reset();  // everything is released whether or not the profile was written
  return error;
}
}  // namespace braid
