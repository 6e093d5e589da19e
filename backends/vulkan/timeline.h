// The Vulkan plugin's timeline semaphore (braid_backend_semaphore): the shared host-side semaphore
// (backends/common/host_semaphore.h: value, sticky failure, host waits, notifications) plus the
// device-side signals queued for it. The host-visible value still moves only on the host (the
// completion thread signals after work_end, as the ABI requires); what this adds is where on the device
// a value *will* be reached: a queue that has submitted (vkQueueSubmit returned) a batch holding work
// that signals value v records "v is reached when timeline T of VkDevice D reaches ticket t". Another
// queue of the same VkDevice that must wait for v then waits on (T, t) on the device instead of holding
// its submission back on the host (queue.cpp, README.md "Semaphores").
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "host_semaphore.h"
#include "vk.h"

struct braid_backend_semaphore_t : braid::plugin::HostSemaphore {
  using HostSemaphore::HostSemaphore;

  struct DeviceSignal {
    VkDevice device;
    VkSemaphore timeline;  // the signalling queue's timeline semaphore
    uint64_t ticket;       // the value it reaches when the batch with the signalling work has finished
  };

  // Someone to tell when a device-side signal for a value arrives (a submission held on the host for
  // want of one). fire(user) is called at most once; drop(user) is called instead when the entry is
  // discarded without firing (the value was reached or failed on the host first, or the semaphore
  // goes). drop runs under this semaphore's lock and must only release.
  struct Watcher {
    uint64_t value;
    VkDevice device;
    void (*fire)(void* user);
    void (*drop)(void* user);
    void* user;
  };
  ~braid_backend_semaphore_t();

  // Records that `value` is reached on the device once `timeline` reaches `ticket`. Called only after
  // the batch that signals `ticket` was submitted, so a wait on it never precedes its signal. Watchers
  // this signal satisfies are moved to `fire`, for the caller to call once it holds no lock.
  void add_device_signal(uint64_t value, const DeviceSignal& at, std::vector<Watcher>& fire);
  // Registers w; false (w not taken) when the value already has a device-side signal, is reached, or
  // the semaphore failed: the caller then acts at once.
  bool watch(const Watcher& w);
  // The earliest submitted device-side signal reaching `value` on `device`, if the value is neither
  // reached on the host nor failed; nothing otherwise (then the caller waits on the host, or not at all).
  std::optional<DeviceSignal> device_signal(uint64_t value, VkDevice device);

 private:
  struct Entry {
    uint64_t value;
    DeviceSignal at;
  };
  void prune_locked(uint64_t host_value);  // drops entries the host value has passed

  std::mutex device_mu_;       // a leaf lock: nothing else is taken under it
  std::deque<Entry> signals_;  // ascending value (one queue signals a semaphore in order)
  std::vector<Watcher> watchers_;
};
