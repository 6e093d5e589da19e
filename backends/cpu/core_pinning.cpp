#include "core_pinning.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>

namespace braid::cpu {
namespace {
std::atomic<uint64_t> next_id{1};
// The pinner that last pinned this thread (0: none). Ids are never reused, unlike addresses.
thread_local uint64_t pinned_by = 0;
thread_local bool exempt = false;  // a transfer queue thread (exempt_this_thread)
thread_local bool named = false;   // a TBB worker given its own name (on_scheduler_entry)
}  // namespace

CorePinner::CorePinner(tbb::task_arena& arena, const std::vector<int>& cpus)
    : tbb::task_scheduler_observer(arena), id_(next_id.fetch_add(1, std::memory_order_relaxed)) {
  if (cpus.empty()) return;
  mask_.assign(static_cast<size_t>(*std::max_element(cpus.begin(), cpus.end())) / 64 + 1, 0);
  for (int c : cpus) mask_[static_cast<size_t>(c) / 64] |= uint64_t{1} << (c % 64);
  observe(true);
}

CorePinner::~CorePinner() { observe(false); }

void CorePinner::exempt_this_thread() { exempt = true; }

void CorePinner::on_scheduler_entry(bool is_worker) {
  // Linux gives a new thread its creator's name, and TBB starts its workers from whichever thread first
  // asks for them: a queue thread, so a worker was called "braid-cpu0-c0" too. TBB keeps its workers
  // process-wide, beyond the devices that used them (README.md, "Threads"), and one left after every
  // context was released read as a braid queue that never stopped (issue 31). Named once, on its
  // first entry into a braid arena.
  if (is_worker && !named) {
    (void)pthread_setname_np(pthread_self(), "tbb-worker");
    named = true;
  }
  if (mask_.empty() || exempt || pinned_by == id_) return;
  // A CPU that left the process's mask since (taskset from outside) makes this fail: the thread then
  // just runs where the scheduler puts it, as it would unpinned.
  if (pthread_setaffinity_np(pthread_self(), mask_.size() * sizeof(uint64_t),
                             reinterpret_cast<const cpu_set_t*>(mask_.data())) == 0)
    pinned_by = id_;
}

}  // namespace braid::cpu
