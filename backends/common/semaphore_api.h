// The semaphore_* entries of a plugin's braid_backend_api: argument checks and exception-to-status
// translation around the plugin's braid_backend_semaphore_t, identical for every backend. Templates,
// so a plugin instantiates them once its own braid_backend_semaphore_t is complete:
//
//   semaphore_create<braid_backend_semaphore_t>, ..., in the plugin's function table.
//
// The type needs a constructor from the initial value and query/signal/wait/notify/fail with the
// HostSemaphore signatures (host_semaphore.h). Every entry is thread-safe (the ABI says so); destroy
// must not race with other calls on the same semaphore.
#pragma once
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "braid_backend.h"
#include "guarded.h"

namespace braid::plugin {

template <typename Sem>
braid_status semaphore_create(braid_backend_device device, uint64_t initial, Sem** out) {
  return guarded([&] {
    if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = nullptr;
    if (device == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
    *out = std::make_unique<Sem>(initial).release();
    return BRAID_OK;
  });
}

// Pending notifications are called once with a failure status (see ~HostSemaphore).
template <typename Sem>
void semaphore_destroy(Sem* sem) {
  std::unique_ptr<Sem> owned(sem);
}

template <typename Sem>
braid_status semaphore_query(Sem* sem, uint64_t* value) {
  if (sem == nullptr || value == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return sem->query(value);
}

template <typename Sem>
braid_status semaphore_signal(Sem* sem, uint64_t value) {
  if (sem == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    sem->signal(value);
    return BRAID_OK;
  });
}

template <typename Sem>
braid_status semaphore_wait(Sem* sem, uint64_t value, uint64_t timeout_ns) {
  if (sem == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return guarded([&] { return sem->wait(value, timeout_ns); });
}

template <typename Sem>
braid_status semaphore_notify(Sem* sem, uint64_t value, void (*fn)(void*, braid_status), void* user) {
  if (sem == nullptr || fn == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    sem->notify(value, fn, user);
    return BRAID_OK;
  });
}

template <typename Sem>
void semaphore_fail(Sem* sem, braid_status status) {
  if (sem == nullptr) return;
  // A C caller may pass any integer: read it as one (loading a bad value as the enum is UB), and pass
  // a code outside the error range on as BRAID_ERR_INTERNAL.
  std::underlying_type_t<braid_status> raw;
  std::memcpy(&raw, &status, sizeof raw);
  const long long code = static_cast<long long>(raw);
  sem->fail(code > 0 && code <= BRAID_ERR_INTERNAL ? status : BRAID_ERR_INTERNAL);
}

}  // namespace braid::plugin
