#include "host_callbacks.h"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

namespace braid::plugin::host {
namespace {

using LogFn = void (*)(braid_log_level, const char*);
using BeginFn = int32_t (*)(void*);
using EndFn = void (*)(void*, braid_status, const char*);

struct Callbacks {
  LogFn log = nullptr;
  BeginFn work_begin = nullptr;
  EndFn work_end = nullptr;
  bool operator==(const Callbacks&) const = default;
};

// A field is usable only if the host's struct_size covers it (an older host has a shorter table).
Callbacks read(const braid_host_api* api) {
  Callbacks cb;
  if (api == nullptr) return cb;
  auto covers = [api](size_t offset, size_t size) { return api->struct_size >= offset + size; };
  if (covers(offsetof(braid_host_api, log), sizeof api->log)) cb.log = api->log;
  if (covers(offsetof(braid_host_api, work_begin), sizeof api->work_begin)) cb.work_begin = api->work_begin;
  if (covers(offsetof(braid_host_api, work_end), sizeof api->work_end)) cb.work_end = api->work_end;
  return cb;
}

// Global mutable state (one set per plugin library, with the query count below): the host's callbacks. We copy
// the function pointers rather than keep the host's table pointer, so the table need only live through
// the query call. Atomics because queue threads read them while another context's query or shutdown
// may run on another thread; they only change while no device is open (first query, last shutdown).
std::atomic<LogFn> g_log{nullptr};
std::atomic<BeginFn> g_work_begin{nullptr};
std::atomic<EndFn> g_work_end{nullptr};

// The plugin's name (its function table's, a string with static storage) for log lines.
std::atomic<const char*> g_name{nullptr};

std::mutex g_query_mu;
int g_query_refs = 0;  // guarded by g_query_mu

void install(const braid_host_api* api) {
  Callbacks cb = read(api);
  g_log.store(cb.log, std::memory_order_release);
  g_work_begin.store(cb.work_begin, std::memory_order_release);
  g_work_end.store(cb.work_end, std::memory_order_release);
}

bool matches(const braid_host_api* api) {
  Callbacks cur{g_log.load(std::memory_order_acquire), g_work_begin.load(std::memory_order_acquire),
                g_work_end.load(std::memory_order_acquire)};
  return cur == read(api);
}

braid_status acquire(const braid_host_api* api) {
  std::lock_guard lock(g_query_mu);
  if (g_query_refs == 0) {
    install(api);
  } else if (!matches(api)) {
    return BRAID_ERR_INVALID_STATE;
  }
  ++g_query_refs;
  return BRAID_OK;
}

}  // namespace

void release(void (*last)()) {
  std::lock_guard lock(g_query_mu);
  if (g_query_refs == 0) return;
  if (--g_query_refs > 0) return;
  if (last != nullptr) last();
  install(nullptr);
}

bool work_begin(void* token) {
  BeginFn fn = g_work_begin.load(std::memory_order_acquire);
  return fn == nullptr || fn(token) != 0;
}

void work_end(void* token, braid_status status, const char* message) {
  if (token == nullptr) return;  // a submission without a token asked for no callbacks
  if (EndFn fn = g_work_end.load(std::memory_order_acquire)) fn(token, status, message);
}

braid_status answer_query(uint32_t host_major, const braid_host_api* host, const braid_backend_api* api,
                          const braid_backend_api** out) noexcept {
  if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  if (host_major != BRAID_BACKEND_ABI_MAJOR) return BRAID_ERR_ABI_MISMATCH;
  try {
    if (braid_status s = acquire(host); s != BRAID_OK) return s;  // a second, different host
  } catch (...) {                                                 // std::mutex::lock
    return BRAID_ERR_INTERNAL;
  }
  g_name.store(api->name, std::memory_order_release);
  *out = api;
  return BRAID_OK;
}

void log(braid_log_level level, std::string_view context, std::string_view message) noexcept {
  LogFn fn = g_log.load(std::memory_order_acquire);
  if (fn == nullptr) return;
  try {
    std::string line;
    if (const char* name = g_name.load(std::memory_order_acquire)) line.append(name).append(": ");
    if (!context.empty()) line.append(context).append(": ");
    line.append(message);
    fn(level, line.c_str());
  } catch (...) {  // no memory for the line: drop it
  }
}

void log(braid_log_level level, std::string_view message) noexcept { log(level, {}, message); }

}  // namespace braid::plugin::host
