#include "engine/engine.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "engine/engine_device.h"
#include "engine/storage.h"
#include "plugin/backend.h"
#include "profiler/profiler.h"

namespace braid {
namespace {

// Set while this thread runs engine callbacks for a backend: a wait from here would wait on the
// thread that has to make progress, so it is refused instead (docs/ENGINE.md).
// initial-exec: libbraid is a shared library, and the default TLS model made every access a call to
// __tls_get_addr (four per op on the backend thread, ~10% of its runtime cost per tiny op). With
// initial-exec it is one %fs-relative load; the 4 bytes fit glibc's static TLS surplus even when
// libbraid is dlopen()ed.
__attribute__((tls_model("initial-exec"))) thread_local int t_engine_callback_depth = 0;

struct CallbackScope {
  CallbackScope() { ++t_engine_callback_depth; }
  ~CallbackScope() { --t_engine_callback_depth; }
};

bool is_done(const std::shared_ptr<OpNode>& n) { return n->done.load(std::memory_order_acquire); }

// Backpressure's low-water mark: a pusher blocked at the bound resumes once in-flight work is below it.
uint64_t low_water(uint64_t bound) { return bound - bound / 4; }

// Whether the device's work in flight, counted as pushed minus the given ended counts, reaches
// max_ops ops or max_bytes bytes with `upcoming` bytes more (an idle device never does).
bool in_flight_reaches(const EngineDevice& device, uint64_t ended_ops, uint64_t ended_bytes, uint64_t max_ops,
                       uint64_t max_bytes, uint64_t upcoming = 0) {
  const uint64_t ops = device.push_side.pushed.ops.load(std::memory_order_relaxed) - ended_ops;
  const uint64_t bytes = device.push_side.pushed.bytes.load(std::memory_order_relaxed) - ended_bytes;
  return ops > 0 && (ops >= max_ops || bytes + upcoming >= max_bytes);
}

const OpNode* failed_producer(const OpNode& node) {
  for (const auto& producer : node.producers) {
    const OpNode* p = producer.get();
    if (p->done.load(std::memory_order_acquire) && p->status != BRAID_OK) return p;
  }
  for (const auto& part : node.joined) {
    const OpNode* p = part.get();
    if (p->done.load(std::memory_order_acquire) && p->status != BRAID_OK) return p;
  }
  return nullptr;
}

void inherit(OpNode& node, const OpNode& failed) {
  node.status = failed.status;
  node.message = failed.message;  // already names the op and device that failed
}

}  // namespace

Engine::Engine(EngineOptions options, Profiler& profiler) : options_(options), profiler_(profiler) {}

const braid_host_api* Engine::host_api() noexcept {
  static const braid_host_api api = {sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR,
                                     // To the application's callback or, when BRAID_LOG asks, stderr (core/log.h).
                                     [](braid_log_level level, const char* message) { log_message(level, message); },
                                     &Engine::work_begin, &Engine::work_end};
  return &api;
}

std::shared_ptr<OpNode> Engine::make_node(const char* name, EngineDevice& device) const {
  // Default-initialised, not zeroed: the kernel call alone is 1.5 KB and most of it is never read.
  auto node = std::allocate_shared_for_overwrite<OpNode>(PoolAllocator<OpNode>(&node_pool_));
  node->engine = const_cast<Engine*>(this);
  node->name = name;
  node->device = &device;
  braid_kernel_call& c = node->call;
  c.struct_size = sizeof c;
  c.op = BRAID_KOP_COUNT;
  c.num_inputs = c.num_outputs = 0;
  // Constant-size memsets: compiled to a few vector stores, where std::fill was a call or a loop.
  std::memset(c.i, 0, sizeof c.i);
  std::memset(c.f, 0, sizeof c.f);  // all-zero bytes are 0.0 in IEEE 754
  node->copy = braid_copy_desc{sizeof(braid_copy_desc), nullptr, 0, nullptr, nullptr, 0, nullptr, 0};
  braid_work& w = node->work;
  w.struct_size = sizeof w;
  w.kind = BRAID_WORK_KERNEL;
  w.kernel = nullptr;
  w.copy = nullptr;
  w.num_waits = 0;
  w.signal = nullptr;
  w.signal_value = 0;
  w.token = nullptr;
  w.flags = 0;
  w.num_kernels = 0;
  w.kernels = nullptr;
  return node;
}

void Engine::throttle(EngineDevice& device, uint64_t upcoming_bytes) {
  EngineDevice::PushSide& side = device.push_side;
  // The common case reads only the pushers' own cache line.
  if (!in_flight_reaches(device, side.ended_seen.ops.load(std::memory_order_relaxed),
                         side.ended_seen.bytes.load(std::memory_order_relaxed), device.inflight_bound.ops,
                         device.inflight_bound.bytes, upcoming_bytes))
    return;
  auto reaches_now = [&](uint64_t max_ops, uint64_t max_bytes, uint64_t upcoming) {
    // seq_cst, as the fetch_add of backpressure_waiters and finish's update: a waiter must not miss
    // the end that its notifier saw no waiter for.
    uint64_t ops = device.ended.ops.load();
    uint64_t bytes = device.ended.bytes.load();
    side.ended_seen.ops.store(ops, std::memory_order_relaxed);  // any reading is a valid lower bound
    side.ended_seen.bytes.store(bytes, std::memory_order_relaxed);
    return in_flight_reaches(device, ops, bytes, max_ops, max_bytes, upcoming);
  };
  if (!reaches_now(device.inflight_bound.ops, device.inflight_bound.bytes, upcoming_bytes)) return;
  if (t_engine_callback_depth > 0) return;  // never block a backend thread
  // Once at the bound, wait until the work in flight has drained to the low-water mark (3/4 of the
  // bound), not merely below the bound: otherwise a pusher faster than its device is woken once per
  // op that ends (a futex wake-up on each side per tiny op) instead of once per quarter of the bound.
  // An op that brings its own bytes also waits until they fit under the bound; every end below the
  // low-water mark wakes the waiters, and an idle device takes any op.
  const uint64_t low_ops = low_water(device.inflight_bound.ops);
  const uint64_t low_bytes = low_water(device.inflight_bound.bytes);
  std::unique_lock lock(device.backpressure_mu);
  device.backpressure_waiters.fetch_add(1);
  device.backpressure_cv.wait(lock, [&] {
    return !reaches_now(low_ops, low_bytes, 0) &&
           !reaches_now(device.inflight_bound.ops, device.inflight_bound.bytes, upcoming_bytes);
  });
  device.backpressure_waiters.fetch_sub(1);
}

void Engine::push(std::shared_ptr<OpNode> node, std::span<Storage* const> reads, std::span<Storage* const> writes,
                  braid_queue_kind kind) {
  EngineDevice& device = *node->device;
  push(std::move(node), reads, writes, device.queue(kind));
}

void Engine::push(std::shared_ptr<OpNode> node, std::span<Storage* const> reads, std::span<Storage* const> writes,
                  Queue& requested) {
  // BRAID_ENGINE=sync waits for the op below; otherwise the caller's reference is handed on as is.
  std::shared_ptr<OpNode> waited = options_.sync ? node : nullptr;
  std::unique_lock lock(mu_);
  wait_to_push(lock, reads, writes, {});
  Pending pending = push_locked(std::move(node), reads, writes, {}, requested);
  lock.unlock();
  register_host_deps(pending);
  if (waited) (void)wait(waited);  // errors surface at wait_to_read / wait_all, as in async mode
}

void Engine::push_partitioned(std::span<Storage* const> storages, std::vector<Part> parts, Queue& join_queue,
                              const char* name) {
  if (parts.empty()) return;
  for (Part& p : parts)
    for (Storage* w : p.writes)
      if (std::find(storages.begin(), storages.end(), w) == storages.end())
        fail(BRAID_ERR_INTERNAL, "push_partitioned: part '", p.node->name, "' writes a storage outside the partition");
  const uint64_t id = ++partitions_;  // under no lock: parts are tagged before they are pushed
  for (Part& p : parts) p.node->partition = id;
  auto join = make_node(name, *join_queue.device);
  join->work.kind = BRAID_WORK_MARKER;
  for (const Part& p : parts) join->joined.push_back(p.node);
  std::shared_ptr<OpNode> waited = options_.sync ? join : nullptr;
  std::vector<Pending> pending;
  pending.reserve(parts.size() + 1);
  {
    // One lock for all of it: no other push lands between the parts and the join, so nothing can
    // observe the storages half written.
    std::unique_lock lock(mu_);
    wait_to_push(lock, storages, {}, storages);
    for (Part& p : parts) pending.push_back(push_locked(std::move(p.node), p.reads, {}, storages, *p.queue));
    pending.push_back(push_locked(std::move(join), storages, storages, {}, join_queue));
  }
  for (Pending& p : pending) register_host_deps(p);
  if (waited) (void)wait(waited);
}

// push() under mu_, in its steps: choose the queue, order the op after the earlier users of its
// storages, make it their latest user, fill in its submission, then submit it or queue it behind the
// host-side dependencies that must signal first.
Engine::Pending Engine::push_locked(std::shared_ptr<OpNode> node, std::span<Storage* const> reads,
                                    std::span<Storage* const> writes, std::span<Storage* const> shared_writes,
                                    Queue& requested) {
  OpNode& n = *node;
  if (profiler_.enabled()) {
    n.profiled = true;
    n.t_submit = profiler_.now();
  }
  n.queue = &requested;
  if (n.queue == &n.device->compute && !n.device->more_compute.empty()) n.queue = &pick_compute(*n.device, reads);
  Pending pending;
  Dependencies deps(n, pending.host_deps);
  order_after_earlier(n, deps, reads, writes, shared_writes);
  become_latest_user(node, reads, writes, shared_writes);
  if (n.status != BRAID_OK) n.work.kind = BRAID_WORK_MARKER;
  n.seq = ++n.queue->next_seq;
  n.device->push_side.pushed.ops.fetch_add(1, std::memory_order_relaxed);
  n.device->push_side.pushed.bytes.fetch_add(n.out_bytes, std::memory_order_relaxed);
  fill_work(n, deps);
  submit_or_defer(std::move(node), pending);
  return pending;
}

void Engine::Dependencies::add(const std::shared_ptr<OpNode>& d, bool on_host) {
  // Same in-order queue: nothing to do (checked first: it needs no load of another thread's line),
  // unless the wait must be on the host (see order_after_earlier).
  if (!d || (d->queue == n_.queue && !on_host) || is_done(d)) return;
  if (!on_host)
    for (uint32_t i = 0; i < num_device; ++i)
      if (device[i].queue == d->queue) {
        device[i].value = std::max(device[i].value, d->seq);
        return;
      }
  for (auto& h : host_)
    if (h.first == d->queue) {
      h.second = std::max(h.second, d->seq);
      return;
    }
  if (!on_host && d->device->backend == n_.device->backend && num_device < device.size())
    device[num_device++] = {d->queue, d->seq};
  else
    host_.emplace_back(d->queue, d->seq);
}

// Reads wait for each storage's last writer; writes also for its readers since. The op keeps every
// storage alive until it ends, and takes its producers' failure (poisoning).
void Engine::order_after_earlier(OpNode& n, Dependencies& deps, std::span<Storage* const> reads,
                                 std::span<Storage* const> writes, std::span<Storage* const> shared_writes) {
  auto keep = [&](Storage* s) {
    for (const auto& k : n.keep)
      if (k.get() == s) return;
    if (!n.keep.full()) {
      n.keep.emplace_back(s->shared_from_this());
      return;
    }
    for (const auto& k : n.keep_more)
      if (k.get() == s) return;
    n.keep_more.push_back(s->shared_from_this());
  };
  auto read_after_writer = [&](Storage* s) {
    keep(s);
    const auto& w = s->var.last_writer;
    if (!w) return;
    // A copy that reads host memory on the host side (OpNode::host_side) after a readback of its own
    // queue into it: the readback lands when its batch completes, after this copy would have read the
    // memory when recorded, so queue order does not hold for it. It waits on the host.
    deps.add(w, n.host_side && w->queue == n.queue && w->work.kind == BRAID_WORK_COPY && w->copy.dst_host != nullptr);
    if (is_done(w)) {
      // An input already known to be poisoned: the op is skipped and inherits the error, but still
      // takes its place in queue order so later writers stay ordered after earlier readers.
      if (w->status != BRAID_OK && n.status == BRAID_OK) inherit(n, *w);
    } else if (!n.producers.full()) {
      n.producers.emplace_back(w);
    } else {
      n.joined.push_back(w);  // failure inherited the same way
    }
  };
  for (Storage* s : reads) read_after_writer(s);
  for (Storage* s : writes) {
    keep(s);
    deps.add(s->var.last_writer);
    const auto& readers = s->var.readers;
    for (size_t i = s->var.done_readers; i < readers.size(); ++i) deps.add(readers[i]);
  }
  // A part of a partitioned write: ordered like a writer, poisoned like a reader; recorded as a reader
  // (become_latest_user), so it does not order the other parts, and the join (a writer) waits for all.
  for (Storage* s : shared_writes) {
    read_after_writer(s);
    const auto& readers = s->var.readers;
    for (size_t i = s->var.done_readers; i < readers.size(); ++i)
      if (readers[i]->partition != n.partition) deps.add(readers[i]);  // not its sibling parts
  }
}

// Program order per variable: the op is now the last writer or one more reader of each storage.
void Engine::become_latest_user(const std::shared_ptr<OpNode>& node, std::span<Storage* const> reads,
                                std::span<Storage* const> writes, std::span<Storage* const> shared_writes) {
  auto add_reader = [&](Storage* s) {
    auto& readers = s->var.readers;
    size_t& done = s->var.done_readers;
    // Readers end roughly in push order: the finished ones at the front are let go at once (their
    // slots become null), and the vector is compacted only when that dead prefix is at least half
    // of it, so each push moves O(1) elements amortised however many readers are in flight.
    while (done < readers.size() && is_done(readers[done])) readers[done++].reset();
    if (done == readers.size()) {
      readers.clear();
      done = 0;
    } else if (done >= 32 && 2 * done >= readers.size()) {
      readers.erase(readers.begin(), readers.begin() + static_cast<std::ptrdiff_t>(done));
      done = 0;
    }
    readers.push_back(node);
  };
  for (Storage* s : reads)
    if (std::find(writes.begin(), writes.end(), s) == writes.end()) add_reader(s);
  for (Storage* s : shared_writes) add_reader(s);
  for (Storage* s : writes) {
    s->var.last_writer = node;
    s->var.readers.clear();
    s->var.done_readers = 0;
  }
}

// The submission: the op's descriptors, its signal on the queue's timeline, and its device-side waits.
void Engine::fill_work(OpNode& n, const Dependencies& deps) {
  braid_work& w = n.work;
  w.kernel = &n.call;
  w.copy = &n.copy;
  w.num_kernels = static_cast<uint32_t>(n.calls.size());
  w.kernels = n.calls.data();
  w.signal = n.queue->timeline;
  w.signal_value = n.seq;
  w.token = &n;
  w.flags = BRAID_WORK_PERSISTENT_DESCS;  // the node holds them until work_end
  w.num_waits = deps.num_device;
  for (uint32_t i = 0; i < deps.num_device; ++i) {
    w.waits[i] = deps.device[i].queue->timeline;
    w.wait_values[i] = deps.device[i].value;
  }
}

void Engine::submit_or_defer(std::shared_ptr<OpNode> node, Pending& pending) {
  OpNode& n = *node;
  Queue& queue = *n.queue;
  if (pending.host_deps.empty() && queue.deferred.empty()) {
    n.self = std::move(node);
    // From here the op may end and be freed on the backend's thread: n is not touched again.
    submit_locked(n);
    return;
  }
  n.self = node;
  // Keep queue order: this op and every later one on this queue wait until the host-side
  // dependencies of those before them have signalled.
  n.foreign_pending = static_cast<uint32_t>(pending.host_deps.size());
  queue.deferred.push_back(node);
  submit_ready_deferred_locked(queue);
  if (!pending.host_deps.empty()) pending.node = std::move(node);
}

void Engine::register_host_deps(Pending& pending) {
  // Outside the lock: a notification may fire inside semaphore_notify.
  for (auto& [dq, value] : pending.host_deps) {
    auto user = std::make_unique<std::weak_ptr<OpNode>>(pending.node);
    braid_status st = dq->device->api->semaphore_notify(dq->timeline, value, &Engine::foreign_ready, user.get());
    if (st == BRAID_OK) {
      (void)user.release();  // owned by foreign_ready now
    } else {
      foreign_ready(user.release(), st);
    }
  }
}

void Engine::submit_locked(OpNode& n) {
  const braid_backend_api* api = n.device->api;
  braid_status st = api->queue_submit(n.queue->handle, &n.work);
  if (st == BRAID_OK) return;
  // Refused synchronously: fail the op, but keep the queue's timeline whole with a marker.
  n.status = st;
  n.message = cat("op '", n.name, "' on ", n.device->id, " was refused by the backend: ", status_name(st));
  n.work.kind = BRAID_WORK_MARKER;
  if (api->queue_submit(n.queue->handle, &n.work) != BRAID_OK) {
    // The queue is unusable: fail its timeline so nobody waits forever, and end the op here.
    api->semaphore_fail(n.queue->timeline, BRAID_ERR_DEVICE);
    finish(n, st, nullptr);
  }
}

void Engine::submit_ready_deferred_locked(Queue& queue) {
  while (!queue.deferred.empty() && queue.deferred.front()->foreign_pending == 0) {
    std::shared_ptr<OpNode> head = std::move(queue.deferred.front());
    queue.deferred.pop_front();
    submit_locked(*head);
  }
}

void Engine::foreign_ready(void* user, braid_status status) {
  std::unique_ptr<std::weak_ptr<OpNode>> owner(static_cast<std::weak_ptr<OpNode>*>(user));
  std::shared_ptr<OpNode> node = owner->lock();
  if (!node) return;
  CallbackScope scope;
  Engine& e = *node->engine;
  std::lock_guard lock(e.mu_);
  if (status != BRAID_OK && node->status == BRAID_OK) {
    node->status = status;
    node->message = cat("op '", node->name, "' on ", node->device->id, ": a device it depends on failed");
  }
  if (node->foreign_pending > 0) --node->foreign_pending;
  e.submit_ready_deferred_locked(*node->queue);
}

int32_t Engine::work_begin(void* token) {
  CallbackScope scope;
  OpNode& n = *static_cast<OpNode*>(token);
  if (n.status == BRAID_OK) {
    if (const OpNode* p = failed_producer(n)) inherit(n, *p);
  }
  if (n.profiled) n.t_begin = n.engine->profiler_.now();
  return n.status == BRAID_OK ? 1 : 0;
}

void Engine::work_end(void* token, braid_status status, const char* message) {
  CallbackScope scope;
  OpNode& n = *static_cast<OpNode*>(token);
  n.engine->finish(n, status, message);
}

void Engine::finish(OpNode& n, braid_status status, const char* message) {
  if (n.status == BRAID_OK) {
    if (const OpNode* p = failed_producer(n)) {
      inherit(n, *p);  // backends that cannot skip still report the inherited error
    } else if (status != BRAID_OK) {
      n.status = status;
      n.message =
          cat("op '", n.name, "' on ", n.device->id, " failed: ", message && *message ? message : status_name(status));
    }
  }
  if (n.profiled) {
    n.t_end = profiler_.now();
    if (n.t_begin == 0) n.t_begin = n.t_submit;
    profiler_.record_op({n.name, n.queue, n.queue->track, n.t_begin, n.t_end, n.status});
  }
  if (n.status != BRAID_OK) record_error(n);
  // Release what the op held before announcing completion, so a waiter sees memory returned.
  n.producers.clear();
  n.joined.clear();
  n.keep.clear();
  n.keep_more.clear();
  EngineDevice& dev = *n.device;
  std::shared_ptr<OpNode> self = std::move(n.self);
  dev.ended.bytes.fetch_add(n.out_bytes);
  dev.ended.ops.fetch_add(1);
  // A waiting pusher wakes at the low-water mark (throttle), so only the end that reaches it notifies.
  // Both counters are reloaded after both increments (seq_cst, like the waiter's), so of concurrent
  // finishers at least one sees every increment and no end that reaches the mark goes unannounced.
  if (dev.backpressure_waiters.load() > 0 &&
      !in_flight_reaches(dev, dev.ended.ops.load(), dev.ended.bytes.load(), low_water(dev.inflight_bound.ops),
                         low_water(dev.inflight_bound.bytes))) {
    std::lock_guard lock(dev.backpressure_mu);
    dev.backpressure_cv.notify_all();
  }
  // Last: a waiter that sees `done` may tear the context down, so nothing of it is touched after.
  n.done.store(true, std::memory_order_release);
  // `self` may be the last reference: the node is freed when it goes out of scope here.
}

void Engine::record_error(const OpNode& n) {
  std::lock_guard lock(error_mu_);
  if (first_error_ == BRAID_OK) {
    first_error_ = n.status;
    first_error_message_ = n.message;
  }
}

bool Engine::may_wait() noexcept { return t_engine_callback_depth == 0; }

WaitResult Engine::wait(const std::shared_ptr<OpNode>& node) {
  if (!node) return {};
  if (!is_done(node)) {
    if (t_engine_callback_depth > 0)
      return {BRAID_ERR_INVALID_STATE, "a wait was issued from an engine thread; it would deadlock"};
    const braid_backend_api* api = node->device->api;
    braid_status st = api->semaphore_wait(node->queue->timeline, node->seq, UINT64_MAX);
    if (st != BRAID_OK && !is_done(node))
      return {st, cat("waiting for op '", node->name, "' on ", node->device->id, " failed: the device's queue failed")};
  }
  return {node->status, node->message};
}

bool Engine::pending_only_on(Storage& storage, const Queue& queue) {
  std::lock_guard lock(mu_);
  const Var& v = storage.var;
  if (v.last_writer && v.last_writer->queue != &queue && !is_done(v.last_writer)) return false;
  for (size_t i = v.done_readers; i < v.readers.size(); ++i)
    if (const auto& r = v.readers[i]; r && r->queue != &queue && !is_done(r)) return false;
  return true;
}

bool Engine::claim_for_host_write(Storage& storage) {
  std::lock_guard lock(mu_);
  Var& v = storage.var;
  if (v.host_readers != 0 || v.host_writing) return false;
  if (v.last_writer && !is_done(v.last_writer)) return false;
  for (size_t i = v.done_readers; i < v.readers.size(); ++i)
    if (v.readers[i] && !is_done(v.readers[i])) return false;
  v.last_writer.reset();
  v.readers.clear();
  v.done_readers = 0;
  v.host_writing = true;
  host_accesses_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Engine::end_host_write(Storage& storage) {
  std::lock_guard lock(mu_);
  storage.var.host_writing = false;
  host_accesses_.fetch_sub(1, std::memory_order_relaxed);
  host_copy_ended_locked();
}

bool Engine::begin_host_read(Storage& storage) {
  std::lock_guard lock(mu_);
  Var& v = storage.var;
  if (v.host_writing) return false;
  if (const auto& w = v.last_writer; w && (!is_done(w) || w->status != BRAID_OK)) return false;
  ++v.host_readers;
  host_accesses_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Engine::end_host_read(Storage& storage) {
  std::lock_guard lock(mu_);
  --storage.var.host_readers;
  host_accesses_.fetch_sub(1, std::memory_order_relaxed);
  host_copy_ended_locked();
}

void Engine::host_copy_ended_locked() {
  host_copies_ended_.fetch_add(1, std::memory_order_release);
  if (host_copy_waiters_ != 0) host_copies_ended_.notify_all();
}

void Engine::wait_for_host_copies(std::unique_lock<Mutex>& lock, std::span<Storage* const> reads,
                                  std::span<Storage* const> writes, std::span<Storage* const> shared_writes) {
  auto busy = [&] {
    for (auto ws : {writes, shared_writes})
      for (Storage* s : ws)
        if (s->var.host_readers != 0 || s->var.host_writing) return true;
    for (Storage* s : reads)
      if (s->var.host_writing) return true;
    return false;
  };
  // The host's copy is one memcpy, and it takes mu_ only to begin and end: sleep until a copy ends
  // (the count is read under mu_, which every end takes, so no end between here and the wait is missed).
  while (busy()) {
    const uint32_t ended = host_copies_ended_.load(std::memory_order_relaxed);
    ++host_copy_waiters_;
    lock.unlock();
    host_copies_ended_.wait(ended, std::memory_order_acquire);
    lock.lock();
    --host_copy_waiters_;
  }
}

void Engine::wait_to_push(std::unique_lock<Mutex>& lock, std::span<Storage* const> reads,
                          std::span<Storage* const> writes, std::span<Storage* const> shared_writes) {
  // The common push pays one load of unit_depth_ (under mu_, already held) and one relaxed atomic load.
  for (;;) {
    if (blocked_by_unit()) {
      // units_ended_ is bumped under mu_, so no end between this read and the wait is missed.
      const uint32_t ended = units_ended_.load(std::memory_order_relaxed);
      ++unit_waiters_;
      lock.unlock();
      units_ended_.wait(ended, std::memory_order_acquire);
      lock.lock();
      --unit_waiters_;
      continue;
    }
    if (host_accesses_.load(std::memory_order_relaxed) == 0) return;
    const uint32_t ended = host_copies_ended_.load(std::memory_order_relaxed);
    wait_for_host_copies(lock, reads, writes, shared_writes);
    // It gave mu_ up only if it waited; a unit may have begun meanwhile, so check both again.
    if (host_copies_ended_.load(std::memory_order_relaxed) == ended) return;
  }
}

Engine::PushUnit::PushUnit(Engine& engine) : engine_(engine) {
  std::unique_lock lock(engine_.mu_);
  while (engine_.blocked_by_unit()) {
    const uint32_t ended = engine_.units_ended_.load(std::memory_order_relaxed);
    ++engine_.unit_waiters_;
    lock.unlock();
    engine_.units_ended_.wait(ended, std::memory_order_acquire);
    lock.lock();
    --engine_.unit_waiters_;
  }
  engine_.unit_owner_ = std::this_thread::get_id();
  ++engine_.unit_depth_;
}

Engine::PushUnit::~PushUnit() {
  std::lock_guard lock(engine_.mu_);
  if (--engine_.unit_depth_ != 0) return;  // an inner unit of the same thread
  engine_.unit_owner_ = std::thread::id();
  engine_.units_ended_.fetch_add(1, std::memory_order_release);
  if (engine_.unit_waiters_ != 0) engine_.units_ended_.notify_all();
}

WaitResult Engine::wait_to_read(Storage& storage) {
  std::shared_ptr<OpNode> writer;
  {
    std::lock_guard lock(mu_);
    writer = storage.var.last_writer;
  }
  return wait(writer);
}

WaitResult Engine::wait_all(std::span<EngineDevice* const> devices) {
  WaitResult idle = wait_idle(devices);
  if (idle.status != BRAID_OK) return idle;
  std::lock_guard lock(error_mu_);
  WaitResult r{first_error_, std::move(first_error_message_)};
  first_error_ = BRAID_OK;
  first_error_message_.clear();
  return r;
}

WaitResult Engine::wait_queue(Queue& queue, uint64_t seq) {
  if (seq == 0) return {};
  if (t_engine_callback_depth > 0)
    return {BRAID_ERR_INVALID_STATE, "a wait was issued from an engine thread; it would deadlock"};
  braid_status st = queue.device->api->semaphore_wait(queue.timeline, seq, UINT64_MAX);
  if (st != BRAID_OK) return {st, cat("waiting for ", queue.device->id, " failed: the device's queue failed")};
  return {};
}

WaitResult Engine::wait_idle(std::span<EngineDevice* const> devices) {
  // Everything pushed so far has ended once each queue's timeline reaches its last sequence number.
  std::vector<std::pair<Queue*, uint64_t>> targets;
  {
    std::lock_guard lock(mu_);
    for (EngineDevice* d : devices)
      for (Queue* q : d->queues()) targets.emplace_back(q, q->next_seq);
  }
  for (auto& [q, seq] : targets) {
    WaitResult r = wait_queue(*q, seq);
    if (r.status != BRAID_OK) return r;
  }
  return {};
}

void Engine::drain(EngineDevice& device) {
  EngineDevice* d = &device;
  (void)wait_idle({&d, 1});
}

Queue& Engine::pick_compute(EngineDevice& device, std::span<Storage* const> reads) {
  for (Storage* s : reads) {
    const auto& w = s->var.last_writer;
    if (!w || w->device != &device || is_done(w)) continue;
    Queue* q = w->queue;
    if (q == &device.compute) return *q;
    for (auto& more : device.more_compute)
      if (q == more.get()) return *q;
    break;  // the first producer runs elsewhere (transfer, comm): fall through to the next in turn
  }
  const uint32_t k = device.next_compute++ % static_cast<uint32_t>(device.more_compute.size() + 1);
  return k == 0 ? device.compute : *device.more_compute[k - 1];
}

}  // namespace braid
