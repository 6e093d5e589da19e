#include "engine/host_queue.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"

namespace braid {

// A timeline semaphore kept on the host: the value the queue's last ended op signalled, a sticky
// failure, waits and notifications. Only this queue's thread signals it.
struct HostQueue::Timeline {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t value = 0;
  braid_status failed = BRAID_OK;
  struct Watch {
    uint64_t value;
    void (*fn)(void*, braid_status);
    void* user;
  };
  std::vector<Watch> watches;

  void signal(uint64_t v) {
    std::vector<Watch> due;
    {
      std::lock_guard lock(mu);
      value = std::max(value, v);
      auto ready = [&](const Watch& w) { return w.value <= value; };
      std::copy_if(watches.begin(), watches.end(), std::back_inserter(due), ready);
      std::erase_if(watches, ready);
    }
    cv.notify_all();
    for (const Watch& w : due) w.fn(w.user, BRAID_OK);
  }
  void fail(braid_status status) {
    std::vector<Watch> due;
    {
      std::lock_guard lock(mu);
      if (failed == BRAID_OK) failed = status == BRAID_OK ? BRAID_ERR_INTERNAL : status;
      due.swap(watches);
    }
    cv.notify_all();
    for (const Watch& w : due) w.fn(w.user, failed);
  }
  braid_status wait(uint64_t v, uint64_t timeout_ns) {
    std::unique_lock lock(mu);
    auto done = [&] { return value >= v || failed != BRAID_OK; };
    if (timeout_ns == UINT64_MAX) {
      cv.wait(lock, done);
    } else if (!cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), done)) {
      return BRAID_ERR_TIMEOUT;
    }
    return failed != BRAID_OK ? failed : BRAID_OK;
  }
  void notify(uint64_t v, void (*fn)(void*, braid_status), void* user) {
    braid_status now;
    {
      std::lock_guard lock(mu);
      if (value < v && failed == BRAID_OK) {
        watches.push_back({v, fn, user});
        return;
      }
      now = failed;
    }
    fn(user, now);
  }
};

struct HostQueue::Item {
  void* token = nullptr;
  bool marker = false;
  std::vector<std::pair<Timeline*, uint64_t>> waits;
  uint64_t signal_value = 0;
  Task task;
  std::function<void(braid_status, const std::string&)> skipped;
};

namespace {

HostQueue::Timeline& timeline_of(braid_backend_semaphore s) { return *reinterpret_cast<HostQueue::Timeline*>(s); }

// The part of the backend table the engine calls on a queue's device: submissions and the timeline.
const braid_backend_api* host_queue_api(braid_status (*submit)(braid_backend_queue, const braid_work*)) {
  static const braid_backend_api api = [submit] {
    braid_backend_api a{};
    a.struct_size = sizeof a;
    a.abi_major = BRAID_BACKEND_ABI_MAJOR;
    a.abi_minor = BRAID_BACKEND_ABI_MINOR;
    a.name = "host";
    a.queue_submit = submit;
    a.semaphore_query = [](braid_backend_semaphore s, uint64_t* v) {
      auto& t = timeline_of(s);
      std::lock_guard lock(t.mu);
      *v = t.value;
      return t.failed;
    };
    a.semaphore_signal = [](braid_backend_semaphore s, uint64_t v) {
      timeline_of(s).signal(v);
      return BRAID_OK;
    };
    a.semaphore_wait = [](braid_backend_semaphore s, uint64_t v, uint64_t timeout_ns) {
      return timeline_of(s).wait(v, timeout_ns);
    };
    a.semaphore_notify = [](braid_backend_semaphore s, uint64_t v, void (*fn)(void*, braid_status), void* user) {
      timeline_of(s).notify(v, fn, user);
      return BRAID_OK;
    };
    a.semaphore_fail = [](braid_backend_semaphore s, braid_status st) { timeline_of(s).fail(st); };
    a.queue_flush = [](braid_backend_queue) { return BRAID_OK; };
    return a;
  }();
  return &api;
}

}  // namespace

HostQueue::HostQueue(std::string name) : timeline_(std::make_unique<Timeline>()) {
  device_.api = host_queue_api(&HostQueue::submit);
  device_.index = -1;  // not one of the context's devices
  device_.id = std::move(name);
  device_.compute.device = &device_;
  device_.compute.handle = reinterpret_cast<braid_backend_queue>(this);
  device_.compute.timeline = reinterpret_cast<braid_backend_semaphore>(timeline_.get());
  // The engine also lists transfer and comm queues of every device; they point at the same queue,
  // so waits over every queue of the device see its one timeline.
  device_.transfer = device_.compute;
  device_.comm = device_.compute;
  thread_ = std::thread([this] { run(); });
}

HostQueue::~HostQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  timeline_->fail(BRAID_ERR_INVALID_STATE);  // notifications still registered are answered, not lost
}

std::shared_ptr<OpNode> HostQueue::push(Engine& engine, const char* name, Task task, std::span<Storage* const> reads,
                                        std::span<Storage* const> writes,
                                        std::function<void(braid_status, const std::string&)> skipped) {
  std::shared_ptr<OpNode> node = engine.make_node(name, device_);
  {
    std::lock_guard lock(mu_);
    tasks_.emplace(node.get(), std::make_pair(std::move(task), std::move(skipped)));
  }
  engine.push(node, reads, writes, device_.compute);
  return node;
}

braid_status HostQueue::submit(braid_backend_queue queue, const braid_work* work) {
  auto& q = *reinterpret_cast<HostQueue*>(queue);
  auto item = std::make_unique<Item>();
  item->token = work->token;
  item->marker = work->kind == BRAID_WORK_MARKER;
  for (uint32_t i = 0; i < work->num_waits; ++i)
    item->waits.emplace_back(&timeline_of(work->waits[i]), work->wait_values[i]);
  item->signal_value = work->signal_value;
  {
    std::lock_guard lock(q.mu_);
    if (auto it = q.tasks_.find(work->token); it != q.tasks_.end()) {
      item->task = std::move(it->second.first);
      item->skipped = std::move(it->second.second);
      q.tasks_.erase(it);
    }
    q.items_.push_back(std::move(item));
  }
  q.cv_.notify_one();
  return BRAID_OK;
}

void HostQueue::run() {
  const braid_host_api& host = *Engine::host_api();
  for (;;) {
    std::unique_ptr<Item> item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !items_.empty(); });
      if (items_.empty()) return;  // stopping, and everything submitted has run
      item = std::move(items_.front());
      items_.pop_front();
    }
    for (auto& [t, v] : item->waits) (void)t->wait(v, UINT64_MAX);  // a failure reaches the op through its producers
    braid_status status = BRAID_OK;
    std::string message;
    void* const token = item->token;
    const uint64_t signal_value = item->signal_value;
    if (token) {
      const bool run = host.work_begin(token) != 0;
      if (run && !item->marker && item->task) {
        try {
          status = item->task(message);
        } catch (const std::exception& e) {
          status = BRAID_ERR_INTERNAL;
          message = e.what();
        }
      } else if (!run && item->skipped) {
        const OpNode& n = *static_cast<const OpNode*>(token);
        item->skipped(n.status, n.message);
      }
    }
    item.reset();  // what the task holds goes before the op is announced done
    if (token) host.work_end(token, status, message.empty() ? nullptr : message.c_str());
    timeline_->signal(signal_value);
  }
}

}  // namespace braid
