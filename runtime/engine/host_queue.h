// A queue of the engine whose ops are host functions run, in order, on a thread of its own. The engine
// orders them like any device op: an op on it starts after the writers of what it reads (on any
// device) have ended, and later ops on any device that touch what it writes wait for it. A process
// group runs its cross-process collectives on one (runtime/distributed): such a call blocks in the
// network library for its whole length, which must not hold a device's queue or a pushing thread.
//
// To the engine it is a device of a backend of its own (EngineDevice with a host-side table), so a
// dependency between it and a device is a host-side notification, never a busy wait.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>

#include "engine/engine.h"
#include "engine/engine_device.h"

namespace braid {

class HostQueue {
 public:
  // Runs the op; returns its status and sets message on failure. Runs on the queue's thread.
  using Task = std::function<braid_status(std::string& message)>;

  // name: the device id shown in messages and traces ("comm:gloo:0").
  explicit HostQueue(std::string name);
  // Waits for the queued ops, then joins the thread. Every op must have been pushed through the
  // engine that will still be alive then.
  ~HostQueue();
  HostQueue(const HostQueue&) = delete;
  HostQueue& operator=(const HostQueue&) = delete;

  EngineDevice& device() noexcept { return device_; }

  // Pushes `task` as the op `name` (a static string) that reads `reads` and writes `writes`. If an op
  // it depends on failed, the task does not run and `skipped` (if set) runs instead, with the failure's
  // status and message, on the queue's thread. Returns the node, to wait on.
  std::shared_ptr<OpNode> push(Engine& engine, const char* name, Task task, std::span<Storage* const> reads,
                               std::span<Storage* const> writes,
                               std::function<void(braid_status, const std::string&)> skipped = {});

  struct Timeline;  // the queue's timeline semaphore (host_queue.cpp)
  struct Item;      // one submission

 private:
  static braid_status submit(braid_backend_queue queue, const braid_work* work);
  void run();

  EngineDevice device_;
  std::unique_ptr<Timeline> timeline_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Item>> items_;
  // Tasks of pushed ops not yet submitted, by the engine's token (the node): the engine may hold an op
  // back (its inputs are produced on another device) and submit it later from another thread.
  std::unordered_map<void*, std::pair<Task, std::function<void(braid_status, const std::string&)>>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid
