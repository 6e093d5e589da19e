// Submissions: work whose waits are met (or signalled by work already submitted on this VkDevice) is
// recorded at once; any other is held back on the host until each wait is reached or gets a
// device-side signal (README.md, "Semaphores").
#include <atomic>
#include <memory>

#include "queue.h"
#include "timeline.h"
#include "work_checks.h"

namespace braid::vk {

// One held wait of a deferred submission, told by two sources: the host notification (reached or
// failed) and the watcher (a device-side signal was submitted). The first to come counts; the note
// goes when both have come (a watcher that never fires is dropped instead).
struct WaitNote {
  Queue* queue;
  void* deferred;
  std::atomic<bool> counted{false};
  std::atomic<int> refs{2};
  static void release(WaitNote* n) {
    if (n->refs.fetch_sub(1) == 1) std::unique_ptr<WaitNote> owned(n);
  }
};

// The first of a note's two callbacks counts the wait; the second touches nothing but the note (the
// queue may be gone by then). While counting, active_ keeps the destructor waiting, since the queue
// is touched again after its lock is released (to fire watchers).
void Queue::count_wait(void* user, braid_status status, bool promoted) {
  auto* note = static_cast<WaitNote*>(user);
  if (note->counted.exchange(true)) {
    WaitNote::release(note);
    return;
  }
  Queue& q = *note->queue;  // alive: the deferred work this wait belongs to is still pending
  auto* d = static_cast<Deferred*>(note->deferred);
  WaitNote::release(note);
  {
    std::unique_lock lock(q.mu_);
    ++q.active_;
    if (promoted) ++q.stats_.promoted;
    if (status != BRAID_OK && d->status == BRAID_OK) d->status = status;
    --d->pending;
    q.drain_deferred(lock);
  }
  q.fire_watchers();
  std::lock_guard lock(q.mu_);
  --q.active_;
  q.cv_.notify_all();
}

void Queue::on_wait_reached(void* user, braid_status status) { count_wait(user, status, false); }

// The deferred work is recorded with a device-side wait (resolve_waits finds the signal).
void Queue::on_promoted(void* user) { count_wait(user, BRAID_OK, true); }

void Queue::on_dropped(void* user) { WaitNote::release(static_cast<WaitNote*>(user)); }

void Queue::fire_watchers() {
  for (;;) {
    std::vector<braid_backend_semaphore_t::Watcher> now;
    {
      std::lock_guard fl(fired_mu_);
      now.swap(fired_);
    }
    if (now.empty()) return;
    for (const auto& w : now) w.fire(w.user);
  }
}

braid_status Queue::submit(const braid_work& work, const char** why) {
  if (const char* bad = plugin::check_work<braid_backend_buffer_t>(work)) {
    *why = bad;
    return BRAID_ERR_INVALID_ARGUMENT;
  }
  FireAfter fire{*this};  // destroyed after `lock`: runs with this queue's lock released
  std::unique_lock lock(mu_);
  std::vector<std::pair<braid_backend_semaphore, uint64_t>> unmet;
  for (uint32_t i = 0; i < work.num_waits; ++i) {
    braid_backend_semaphore sem = work.waits[i];
    uint64_t v = 0;
    braid_status st = sem->query(&v);
    if (st == BRAID_OK && v >= work.wait_values[i]) continue;
    // Signalled by work already submitted on this VkDevice: record now and wait on the device.
    if (st == BRAID_OK && sem->device_signal(work.wait_values[i], device_.handle())) continue;
    // Signalled by the host, another device, or work not submitted yet: hold it back on the host.
    unmet.emplace_back(sem, work.wait_values[i]);
  }
  if (!unmet.empty()) ++stats_.host_held;
  if (unmet.empty() && deferred_.empty() && !busy_) {
    busy_ = true;
    lock_ = &lock;
    record(lock, work);
    lock_ = nullptr;
    busy_ = false;
    drain_deferred(lock);  // submissions that arrived while this one was recording
    return BRAID_OK;
  }
  auto d = std::make_unique<Deferred>();
  d->work = plugin::copy_work(work);
  if (work.kind == BRAID_WORK_KERNEL) d->call = *work.kernel;
  if (work.kind == BRAID_WORK_COPY) d->copy = *work.copy;
  if (work.kind == BRAID_WORK_KERNELS && !persistent_descs(work))
    d->calls.assign(work.kernels, work.kernels + work.num_kernels);
  d->pending = static_cast<uint32_t>(unmet.size());
  Deferred* raw = d.get();
  deferred_.push_back(std::move(d));
  if (unmet.empty()) {
    drain_deferred(lock);
    return BRAID_OK;
  }
  lock.unlock();
  // Registered outside the lock: a notification may run inside semaphore_notify. Each held wait is also
  // watched for its device-side signal: once the signalling batch is submitted, the work is recorded
  // with a device-side wait instead of waiting for the value to be reached on the host.
  for (auto& [sem, value] : unmet) {
    auto note = std::make_unique<WaitNote>();
    note->queue = this;
    note->deferred = raw;
    WaitNote* n = note.release();  // owned by its two callbacks from here (WaitNote::release)
    if (!sem->watch({value, device_.handle(), &Queue::on_promoted, &Queue::on_dropped, n})) {
      if (sem->device_signal(value, device_.handle()))
        on_promoted(n);  // submitted meanwhile
      else
        on_dropped(n);  // reached or failed: the notification below counts it
    }
    sem->notify(value, &Queue::on_wait_reached, n);
  }
  return BRAID_OK;
}

}  // namespace braid::vk
