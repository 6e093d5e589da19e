// The C ABI of contexts, devices, memory statistics and the profiler.
#include <cstring>

#include "context/context.h"
#include "core/error.h"
#include "core/in_struct.h"
#include "core/out_struct.h"

using namespace braid;

extern "C" {

BRAID_API braid_status braid_context_create(const braid_context_options* options, braid_context* out) {
  return guard("braid_context_create", [&] {
    if (!out) fail(BRAID_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    const braid_context_options o =
        read_in_struct<braid_context_options>(options, BRAID_CONTEXT_OPTIONS_INIT, "options");
    // Owned through the handle's reference count; a live handle from here (core/handle_pool.h).
    *out = ContextPool::instance().publish(ContextPool::instance().make(o));
  });
}

BRAID_API braid_status braid_context_retain(braid_context ctx) {
  return guard("braid_context_retain", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    int32_t n = c.app_refs.load();
    do {
      if (n <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "ctx was released by the application (only its tensors hold it)");
    } while (!c.app_refs.compare_exchange_weak(n, n + 1));
    c.refs.fetch_add(1);
  });
}

BRAID_API braid_status braid_context_release(braid_context ctx) {
  return guard("braid_context_release", [&] {
    if (!ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "ctx is NULL");
    // Not use_context: a context inherited across fork() may still be released in the child.
    if (!ContextPool::instance().is_live(ctx))
      fail(BRAID_ERR_INVALID_ARGUMENT, "ctx is not a live context handle (released, or never one)");
    // Only the application's own references: the rest belong to its tensors.
    int32_t n = ctx->app_refs.load();
    do {
      if (n <= 0)
        fail(BRAID_ERR_INVALID_ARGUMENT,
             "ctx was already released as many times as it was created and retained (its tensors still hold it)");
    } while (!ctx->app_refs.compare_exchange_weak(n, n - 1));
    // The last reference: the context is gone whatever this says, and a profile that could not be
    // written is the caller's to know (it asked for one).
    if (std::string error = release_context(ctx); !error.empty()) fail(BRAID_ERR_IO, error);
  });
}

BRAID_API braid_status braid_context_backend_count(braid_context ctx, int32_t* out) {
  return guard("braid_context_backend_count", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (!out) fail(BRAID_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = static_cast<int32_t>(c.backends.size());
  });
}

BRAID_API braid_status braid_context_backend_info(braid_context ctx, int32_t index, braid_backend_info* out) {
  return guard("braid_context_backend_info", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (index < 0 || static_cast<size_t>(index) >= c.backends.size())
      fail(BRAID_ERR_INVALID_ARGUMENT, "backend index ", index, " out of range (", c.backends.size(), " backends)");
    const Backend& b = *c.backends[static_cast<size_t>(index)];
    braid_backend_info info{};
    info.struct_size = sizeof info;
    info.name = b.name.c_str();
    info.path = b.path.c_str();
    info.abi_major = b.abi_major;
    info.abi_minor = b.abi_minor;
    info.loaded = b.loaded ? 1 : 0;
    info.device_count = b.device_count;
    info.reason = b.reason.c_str();
    copy_out(out, info, "out");
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_context_get_backend_info(braid_context, int32_t, braid_backend_info*)
    __attribute__((alias("braid_context_backend_info")));

BRAID_API braid_status braid_context_device_count(braid_context ctx, int32_t* out) {
  return guard("braid_context_device_count", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (!out) fail(BRAID_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = static_cast<int32_t>(c.devices.size());
  });
}

BRAID_API braid_status braid_context_find_device(braid_context ctx, const char* name, braid_device* out) {
  return guard("braid_context_find_device", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (!name) fail(BRAID_ERR_INVALID_ARGUMENT, "name is NULL");
    if (!out) fail(BRAID_ERR_INVALID_ARGUMENT, "out is NULL");
    for (auto& d : c.devices)
      if (d->id == name) {
        *out = d->index;
        return;
      }
    fail(BRAID_ERR_NOT_FOUND, "no device named '", name, "'");
  });
}

BRAID_API braid_status braid_context_device_info(braid_context ctx, braid_device device, braid_device_info* out) {
  return guard("braid_context_device_info", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    Device& d = c.device(device, "device");
    braid_device_info info{};
    info.struct_size = sizeof info;
    info.id = d.id.c_str();
    info.backend = d.backend->name.c_str();
    info.name = d.props.name;
    info.kind = d.props.kind;
    info.backend_index = d.backend_index;
    std::memcpy(info.uuid, d.props.uuid, sizeof info.uuid);
    info.memory_bytes = d.props.memory_bytes;
    info.compute_units = d.props.compute_units;
    info.compute_queues = d.props.compute_queues;
    info.transfer_queues = d.props.transfer_queues;
    info.l1_cache_bytes = d.props.l1_cache_bytes;
    info.l2_cache_bytes = d.props.l2_cache_bytes;
    info.l3_cache_bytes = d.props.l3_cache_bytes;
    info.dtype_mask = d.props.dtype_mask;
    // bool is stored as uint8 and computes through int32 (core/dtype.h, kernel_dtype): a device has it
    // where its backend copies, casts and fills uint8.
    if (d.supports(BRAID_KOP_COPY, BRAID_UINT8) && d.supports(BRAID_KOP_FILL, BRAID_UINT8) &&
        d.supports(BRAID_KOP_BINARY, BRAID_INT32))
      info.dtype_mask |= 1u << BRAID_BOOL;
    info.properties_json = d.props_json.c_str();
    copy_out(out, info, "out");
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_context_get_device_info(braid_context, braid_device, braid_device_info*)
    __attribute__((alias("braid_context_device_info")));

BRAID_API braid_status braid_wait_all(braid_context ctx) {
  return guard("braid_wait_all", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    int64_t t0 = c.profiler.enabled() ? c.profiler.now() : 0;
    WaitResult r = c.engine->wait_all(c.engine_devices());
    if (t0) c.profiler.record_wait("wait_all", t0, c.profiler.now());
    if (r.status != BRAID_OK) fail(r.status, r.message);
  });
}

BRAID_API braid_status braid_context_set_seed(braid_context ctx, uint64_t seed) {
  return guard("braid_context_set_seed", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    c.seed.store(seed);
    c.rng_draw.store(0);
  });
}

BRAID_API braid_status braid_memory_stats_get(braid_context ctx, braid_device device, braid_memory_stats* out) {
  return guard("braid_memory_stats_get", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    MemoryStats s = c.device(device, "device").allocator->stats();
    braid_memory_stats m{};
    m.struct_size = sizeof m;
    m.allocated_bytes = s.allocated;
    m.reserved_bytes = s.reserved;
    m.peak_allocated_bytes = s.peak_allocated;
    m.peak_reserved_bytes = s.peak_reserved;
    m.alloc_count = s.alloc_count;
    m.backend_alloc_count = s.backend_alloc_count;
    copy_out(out, m, "out");
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_memory_get_stats(braid_context, braid_device, braid_memory_stats*)
    __attribute__((alias("braid_memory_stats_get")));

BRAID_API braid_status braid_memory_empty_cache(braid_context ctx, braid_device device) {
  return guard("braid_memory_empty_cache", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    c.device(device, "device").allocator->empty_cache();
  });
}

BRAID_API braid_status braid_memory_reset_peak(braid_context ctx, braid_device device) {
  return guard("braid_memory_reset_peak", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    c.device(device, "device").allocator->reset_peak();
  });
}

BRAID_API braid_status braid_profiler_start(braid_context ctx) {
  return guard("braid_profiler_start", [&] { use_context(ctx, "ctx")->profiler.start(); });
}

BRAID_API braid_status braid_profiler_stop(braid_context ctx, const char* path) {
  return guard("braid_profiler_stop", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (!path || !*path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL or empty");
    (void)c.engine->wait_idle(c.engine_devices());  // recorded work must have its end times
    c.profiler.stop();
    c.profiler.write(path, c.profile_devices());
  });
}

}  // extern "C"
