// The dependency engine (docs/ENGINE.md). Every op is pushed with the storages it reads and writes; the
// engine orders it after earlier writers (and, for writes, earlier readers) of those storages and
// submits it to a backend queue at once. Dependencies on the same queue need nothing; on another
// queue of the same backend they become device-side semaphore waits; on another backend the op is
// submitted when the foreign semaphore signals (a notification, never a busy loop).
//
// Threads: push/wait may be called from any application thread (pushes serialise on mu_ only
// briefly). Backends call work_begin/work_end on their own threads; those never take mu_ unless an
// op failed or cross-backend work was deferred.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "braid_backend.h"
#include "core/mutex.h"
#include "engine/node.h"
#include "memory/slot_pool.h"

namespace braid {

struct EngineDevice;
struct Storage;
class Profiler;

struct EngineOptions {
  bool sync = false;  // BRAID_ENGINE=sync: every push waits for its op
};

struct WaitResult {
  braid_status status = BRAID_OK;
  std::string message;
};

class Engine {
 public:
  Engine(EngineOptions options, Profiler& profiler);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  static const braid_host_api* host_api() noexcept;

  std::shared_ptr<OpNode> make_node(const char* name, EngineDevice& device) const;
  // Blocks while the device has too much work in flight. Call before allocating an op's outputs;
  // upcoming_bytes, where known, are what the op will add (a graph run's outputs and workspace), so
  // that they too fit under the bound unless the device is idle.
  void throttle(EngineDevice& device, uint64_t upcoming_bytes = 0);
  // Pushes node (its call/copy/work filled in) to device's queue of `kind`. reads and writes may
  // overlap (an in-place op lists a storage in both). If the backend refuses the submission, the op
  // is failed (its writes poisoned) as if it had run, and the error surfaces at wait, like any other.
  // Takes the caller's reference: it becomes the one the backend holds until work_end (OpNode::self),
  // so a push costs no reference count of its own; pass a copy to wait on the node afterwards.
  void push(std::shared_ptr<OpNode> node, std::span<Storage* const> reads, std::span<Storage* const> writes,
            braid_queue_kind kind);
  // The same onto a given queue of the node's device (collectives use the device's comm queue).
  void push(std::shared_ptr<OpNode> node, std::span<Storage* const> reads, std::span<Storage* const> writes,
            Queue& queue);

  // One op of a partitioned write: its node (call filled in), what it reads, which of the partition's
  // storages it writes (a part), and its queue.
  struct Part {
    std::shared_ptr<OpNode> node;
    std::vector<Storage*> reads;
    std::vector<Storage*> writes;
    Queue* queue = nullptr;
  };
  // Ops that each write a disjoint part of the same storages, run at once (a collective's devices
  // each reduce their slice of every tensor). The engine orders whole storages, so pushed one by one
  // they would run one after another. Here every part is ordered after all earlier readers and writers
  // of `storages` but not after the other parts; then a join marker named `name` on join_queue becomes
  // the storages' last writer: it waits for every part and inherits the failure of any, so later ops
  // see the storages whole (or poisoned). The caller guarantees that the parts' writes are disjoint.
  void push_partitioned(std::span<Storage* const> storages, std::vector<Part> parts, Queue& join_queue,
                        const char* name);

  // A collective's pushes as one unit (docs/ENGINE.md#push-units): while a thread holds one, a push
  // from any other thread waits until it ends, so the unit's ops are consecutive in every storage's
  // program order and the collective orders against every other op like one op. A collective is many
  // pushes over the same tensors; without this, two threads' collectives interleave their pushes and
  // the engine faithfully runs a mix that no order of the calls gives (issue 31). Nests on one thread.
  // The holder only pushes, allocates and throttles, which wait for work already pushed, never for
  // another thread's push; so a unit always ends.
  class PushUnit {
   public:
    explicit PushUnit(Engine& engine);
    ~PushUnit();
    PushUnit(const PushUnit&) = delete;
    PushUnit& operator=(const PushUnit&) = delete;

   private:
    Engine& engine_;
  };

  // Whether every op still in flight on the storage (its writer, its readers) runs on `queue`: an op
  // pushed to that in-order queue may then overwrite it without waiting for anything.
  bool pending_only_on(Storage& storage, const Queue& queue);

  // Whether no op is in flight on the storage (its last writer and readers have ended) and the host is
  // not reading it. If so, the storage forgets them, the last writer's error included: the caller is
  // about to overwrite all of it from the host, synchronously, which makes a poisoned storage readable
  // again as an upload does. Until end_host_write, an op another thread pushes on the storage waits.
  bool claim_for_host_write(Storage& storage);
  void end_host_write(Storage& storage);
  // Whether the storage's last writer has ended without error; if so the host may read its memory
  // until end_host_read, and an op another thread pushes to write it meanwhile waits. Otherwise the
  // caller waits for the writer (wait_to_read, which reports its error) and asks again.
  bool begin_host_read(Storage& storage);
  void end_host_read(Storage& storage);

  // Whether this thread may wait (it is not running an engine callback for a backend).
  static bool may_wait() noexcept;
  // Waits for the op to end; returns its status and message. Errors with BRAID_ERR_INVALID_STATE when
  // called from an engine/backend thread instead of deadlocking.
  WaitResult wait(const std::shared_ptr<OpNode>& node);
  // Waits for the storage's last writer (as of now).
  WaitResult wait_to_read(Storage& storage);
  // Waits for everything pushed so far; returns the first failure since the previous wait_all.
  WaitResult wait_all(std::span<EngineDevice* const> devices);
  // Waits for everything pushed so far, leaving the recorded first failure for wait_all.
  WaitResult wait_idle(std::span<EngineDevice* const> devices);
  // Waits for the device's queues to drain (allocator out-of-memory path).
  void drain(EngineDevice& device);

 private:
  // What push_locked leaves for after the lock: notifications to register for dependencies on other
  // backends (node is set when there are any).
  struct Pending {
    std::vector<std::pair<Queue*, uint64_t>> host_deps;
    std::shared_ptr<OpNode> node;
  };
  // push() under mu_. shared_writes: storages the op writes a part of (push_partitioned).
  Pending push_locked(std::shared_ptr<OpNode> node, std::span<Storage* const> reads, std::span<Storage* const> writes,
                      std::span<Storage* const> shared_writes, Queue& requested);
  // What an op waits for before it runs, as (queue, value), at most one per queue. Those on the op's
  // own backend that fit in the submission become device-side waits; the rest are notifications
  // handled on the host (register_host_deps).
  class Dependencies {
   public:
    Dependencies(const OpNode& n, std::vector<std::pair<Queue*, uint64_t>>& host) : n_(n), host_(host) {}
    // on_host: wait on the host even for an op of the same queue.
    void add(const std::shared_ptr<OpNode>& producer, bool on_host = false);
    // A trivial struct, not std::pair: pair's constructor would zero all the slots on every push.
    struct Wait {
      Queue* queue;
      uint64_t value;
    };
    std::array<Wait, BRAID_MAX_WAITS> device;  // the first num_device are used (left uninitialised)
    uint32_t num_device = 0;

   private:
    const OpNode& n_;  // its queue is chosen
    std::vector<std::pair<Queue*, uint64_t>>& host_;
  };
  // The steps of push_locked, in order.
  static void order_after_earlier(OpNode& n, Dependencies& deps, std::span<Storage* const> reads,
                                  std::span<Storage* const> writes, std::span<Storage* const> shared_writes);
  static void become_latest_user(const std::shared_ptr<OpNode>& node, std::span<Storage* const> reads,
                                 std::span<Storage* const> writes, std::span<Storage* const> shared_writes);
  static void fill_work(OpNode& n, const Dependencies& deps);
  void submit_or_defer(std::shared_ptr<OpNode> node, Pending& pending);
  void register_host_deps(Pending& pending);
  WaitResult wait_queue(Queue& queue, uint64_t seq);
  static int32_t work_begin(void* token);
  static void work_end(void* token, braid_status status, const char* message);
  static void foreign_ready(void* user, braid_status status);

  void submit_locked(OpNode& node);
  // With several compute queues: the queue of the first input's unfinished producer on this device
  // (a chain stays on one in-order queue and needs no semaphore), else the next one in turn.
  Queue& pick_compute(EngineDevice& device, std::span<Storage* const> reads);
  void submit_ready_deferred_locked(Queue& queue);
  void finish(OpNode& node, braid_status status, const char* message);
  void record_error(const OpNode& node);

  EngineOptions options_;
  Profiler& profiler_;
  mutable SlotPool node_pool_;
  Mutex mu_;  // vars, queue sequence numbers, deferred lists (taken once per push: core/mutex.h)
  // Host copies in progress (Var::host_readers, host_writing): a push checks its storages only when
  // there is one, so the common push pays one relaxed load.
  std::atomic<uint32_t> host_accesses_{0};
  // Waits, giving mu_ up, while the host copies into or out of a storage the op would write (or read,
  // for a host write).
  void wait_for_host_copies(std::unique_lock<Mutex>& lock, std::span<Storage* const> reads,
                            std::span<Storage* const> writes, std::span<Storage* const> shared_writes);
  // Counts ended host copies; pushes waiting in wait_for_host_copies sleep on it (both under mu_).
  std::atomic<uint32_t> host_copies_ended_{0};
  uint32_t host_copy_waiters_ = 0;
  void host_copy_ended_locked();
  // The push unit in progress (PushUnit), under mu_: its thread and nesting depth (0: none).
  std::thread::id unit_owner_;
  uint32_t unit_depth_ = 0;
  // Counts ended units; pushes from other threads sleep on it (as on host_copies_ended_).
  std::atomic<uint32_t> units_ended_{0};
  uint32_t unit_waiters_ = 0;
  // Waits, giving mu_ up, while another thread's unit is in progress or (for a push) a host copy
  // touches its storages; returns with mu_ held and neither in the way.
  void wait_to_push(std::unique_lock<Mutex>& lock, std::span<Storage* const> reads, std::span<Storage* const> writes,
                    std::span<Storage* const> shared_writes);
  bool blocked_by_unit() const noexcept { return unit_depth_ != 0 && unit_owner_ != std::this_thread::get_id(); }
  std::atomic<uint64_t> partitions_{0};  // ids of partitioned writes (OpNode::partition)
  std::mutex error_mu_;
  braid_status first_error_ = BRAID_OK;
  std::string first_error_message_;
};

}  // namespace braid
