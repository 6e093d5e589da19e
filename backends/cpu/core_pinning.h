// Pins the threads that work for a CPU device to the device's CPUs (DeviceShare::cpus): the TBB
// workers that join its arena and the device's compute queue threads (which run every kernel that does
// not fan out on their own). Transfer queue threads stay unpinned: a device's transfer queue plays the
// part of a GPU's copy engine, whose copies run beside its compute (the chapter's "compute while
// copying"); pinned to a one-core device's only CPU, a copy would just take turns with the kernels. Two devices cut
// from one machine then each keep their cores (and those cores' L1/L2) instead of the scheduler moving
// their threads over every core; TBB's workers are shared by all arenas, so a worker is re-pinned
// whenever it joins another device's arena (a device with every core pins to all of them, which also
// undoes another device's pin).
#pragma once
#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#include <cstdint>
#include <vector>

namespace braid::cpu {

class CorePinner final : public tbb::task_scheduler_observer {
 public:
  // Observes `arena` (already initialised) when cpus is not empty.
  CorePinner(tbb::task_arena& arena, const std::vector<int>& cpus);
  ~CorePinner() override;
  CorePinner(const CorePinner&) = delete;
  CorePinner& operator=(const CorePinner&) = delete;

  void on_scheduler_entry(bool is_worker) override;
  // Pins the calling thread (a compute queue thread, which runs the kernels that do not fan out itself).
  void pin_this_thread() { on_scheduler_entry(false); }
  // Keeps the calling thread (a transfer queue thread) unpinned, also when it enters an arena to split
  // a large copy.
  static void exempt_this_thread();

 private:
  std::vector<uint64_t> mask_;  // a cpu_set_t of mask_.size() * 64 CPUs
  uint64_t id_;                 // unique per pinner: a thread already pinned by it skips the syscall
};

}  // namespace braid::cpu
