#include "distributed/kvstore_server.h"

#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "distributed/kvstore_wire.h"
#include "distributed/launch_env.h"
#include "distributed/process_group.h"
#include "distributed/store.h"
#include "ops/copy.h"
#include "parallel/optimizer.h"
#include "tensor/host_copy.h"

namespace braid::distributed {
namespace {

// A server waits for a worker's next request without a limit of its own: a worker that dies closes
// its connection, which ends the wait at once, and one that computes for an hour between two pushes
// is not a failure. (The payload that follows a request has the job's timeout.)
constexpr std::chrono::hours kIdleWait{24 * 365};

bool storable(braid_dtype d) {
  return d == BRAID_FLOAT32 || d == BRAID_FLOAT64 || d == BRAID_INT32 || d == BRAID_INT64;
}

// sum += add, element by element, in the key's dtype.
template <class T>
void accumulate(std::byte* sum, const std::byte* add, uint64_t n) {
  auto* s = reinterpret_cast<T*>(sum);
  const auto* a = reinterpret_cast<const T*>(add);
  for (uint64_t i = 0; i < n; ++i) s[i] += a[i];
}
void accumulate(braid_dtype d, std::byte* sum, const std::byte* add, uint64_t n) {
  switch (d) {
    case BRAID_FLOAT32: accumulate<float>(sum, add, n); break;
    case BRAID_FLOAT64: accumulate<double>(sum, add, n); break;
    case BRAID_INT32: accumulate<int32_t>(sum, add, n); break;
    case BRAID_INT64: accumulate<int64_t>(sum, add, n); break;
    default: break;  // refused at init
  }
}

class Server {
 public:
  Server(Context& ctx, KVJob job) : ctx_(ctx), job_(std::move(job)), sync_(true) {}
  void run();

 private:
  struct Key {
    braid_dtype dtype = BRAID_FLOAT32;
    uint64_t offset = 0, count = 0, total = 0;
    TensorRef value;  // this server's part, on a host-memory device
    parallel::OptimizerState state;
    // dist_sync: the pushes of the round in progress, by worker (summed in rank order when complete).
    std::vector<std::vector<std::byte>> pending;
    std::vector<bool> pushed;
    int32_t pushes = 0;
  };
  using Lock = std::unique_lock<std::mutex>;

  void session(int32_t worker);
  // Handles one request; returns the reply (and its payload in `out`). Throws Error for a refusal.
  Message handle(int32_t worker, const Message& m, std::vector<std::byte>& payload, std::vector<std::byte>& out);
  Key& key_of(const Message& m, const char* call);
  TensorRef host_tensor(braid_dtype dtype, uint64_t count, const std::byte* data);
  void update(Key& k, const std::byte* grad);  // with mu_ held
  void wait(Lock& lock, const std::function<bool()>& done);
  void fail_job(const std::string& why);
  // With mu_ held: fails the job when a departed worker is needed: by key's round (a push), by a
  // barrier (call "barrier", key NULL), or at a goodbye (both NULL) by any round or barrier in progress.
  void check_departed(const Key* key, const char* call);

  Context& ctx_;
  KVJob job_;
  bool sync_;  // the workers' store type: dist_sync / dist_device_sync (else dist_async)
  std::string prefix_;
  std::unique_ptr<StoreClient> store_;
  std::shared_ptr<CommPlugin> plugin_;
  std::string address_;
  Device* host_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Key> keys_;
  std::optional<braid_optimizer_params> optimizer_;
  int32_t barrier_arrived_ = 0;
  uint64_t barrier_generation_ = 0;
  // Workers that said goodbye: a round or a barrier that needs one of them can never complete.
  std::vector<int32_t> departed_;
  std::string failure_;  // the first failure; from then every request is refused with it
};

void Server::fail_job(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (failure_.empty()) failure_ = why;
  }
  cv_.notify_all();
}

void Server::check_departed(const Key* key, const char* call) {
  if (departed_.empty()) return;
  // A round of a key waits for a departed worker that has not pushed in it; a barrier for every worker.
  auto round_waits = [&](const Key& k) {
    for (int32_t d : departed_)
      if (!k.pushed[static_cast<size_t>(d)]) return true;
    return false;
  };
  bool blocked = false;
  if (key) {
    blocked = round_waits(*key);
  } else if (call) {
    blocked = true;  // a barrier
  } else {
    blocked = barrier_arrived_ > 0;
    for (const auto& [k, state] : keys_) blocked = blocked || (state.pushes > 0 && round_waits(state));
  }
  if (!blocked) return;
  std::string who;
  for (int32_t w : departed_) who += cat(who.empty() ? "" : ", ", w);
  failure_ =
      cat("worker(s) ", who, " released their store (said goodbye) while ",
          call ? cat("another worker's ", call, " needs them") : std::string("a round or barrier waited for them"),
          " (every worker must make the same pushes and barriers: uneven step counts?)");
  cv_.notify_all();
  fail(BRAID_ERR_IO, failure_);
}

void Server::wait(Lock& lock, const std::function<bool()>& done) {
  cv_.wait(lock, [&] { return done() || !failure_.empty(); });
  if (!failure_.empty()) fail(BRAID_ERR_IO, failure_);
}

TensorRef Server::host_tensor(braid_dtype dtype, uint64_t count, const std::byte* data) {
  const int64_t n = static_cast<int64_t>(count);
  return tensor_from_host(ctx_, *host_, dtype, Shape::of({&n, 1}), data);
}

Server::Key& Server::key_of(const Message& m, const char* call) {
  auto it = keys_.find(m.key);
  if (it == keys_.end())
    fail(BRAID_ERR_INVALID_ARGUMENT, call, ": key ", m.key, " was not initialised (braid_kvstore_init)");
  Key& k = it->second;
  if (static_cast<int32_t>(k.dtype) != m.dtype || k.offset != m.offset || k.count != m.count || k.total != m.total)
    fail(BRAID_ERR_INVALID_ARGUMENT, call, ": key ", m.key, " holds ", k.total, " elements of ", dtype_name(k.dtype),
         "; this worker sent ", m.total, " of ", dtype_name(static_cast<braid_dtype>(m.dtype)));
  return k;
}

void Server::update(Key& k, const std::byte* grad) {
  TensorRef g = host_tensor(k.dtype, k.count, grad);
  if (optimizer_) {
    parallel::apply_update(*optimizer_, *k.value, *g, k.state, optimizer_->rescale_grad);
  } else {
    k.value = std::move(g);  // without an optimizer the sum replaces the value, as in MXNet
  }
}

Message Server::handle(int32_t worker, const Message& m, std::vector<std::byte>& payload, std::vector<std::byte>& out) {
  Message reply;
  reply.key = m.key;
  Lock lock(mu_);
  if (!failure_.empty()) fail(BRAID_ERR_IO, failure_);
  switch (m.kind) {
    case Kind::kInit: {
      const auto dtype = static_cast<braid_dtype>(m.dtype);
      if (!storable(dtype))
        fail(BRAID_ERR_DTYPE, "kvstore_init: key ", m.key, " is ", dtype_name(dtype),
             "; the servers hold float32, float64, int32 or int64 values");
      if (keys_.count(m.key)) fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_init: key ", m.key, " is already initialised");
      if (m.count * dtype_size(dtype) != payload.size())
        fail(BRAID_ERR_IO, "kvstore_init: key ", m.key, ": the payload does not match its element count");
      Key k;
      k.dtype = dtype;
      k.offset = m.offset;
      k.count = m.count;
      k.total = m.total;
      k.value = host_tensor(dtype, m.count, payload.data());
      k.pending.resize(static_cast<size_t>(job_.num_workers));
      k.pushed.assign(static_cast<size_t>(job_.num_workers), false);
      keys_.emplace(m.key, std::move(k));
      return reply;
    }
    case Kind::kPush: {
      Key& k = key_of(m, "kvstore_push");
      if (optimizer_ && k.dtype != BRAID_FLOAT32 && k.dtype != BRAID_FLOAT64)
        fail(BRAID_ERR_DTYPE, "kvstore_push: key ", m.key, " holds ", dtype_name(k.dtype),
             " values; the optimizer updates float32 or float64 ones");
      if (payload.size() != k.count * dtype_size(k.dtype))
        fail(BRAID_ERR_IO, "kvstore_push: key ", m.key, ": the payload does not match its element count");
      if (!sync_) {
        update(k, payload.data());
        return reply;
      }
      check_departed(&k, "push");
      const auto w = static_cast<size_t>(worker);
      // A second push before the round ended belongs to the next round.
      wait(lock, [&] { return !k.pushed[w]; });
      k.pending[w] = std::move(payload);
      k.pushed[w] = true;
      if (++k.pushes == job_.num_workers) {
        // Summed in rank order, whatever order the pushes came in: a run is reproducible.
        std::vector<std::byte> sum = std::move(k.pending[0]);
        for (size_t i = 1; i < k.pending.size(); ++i) accumulate(k.dtype, sum.data(), k.pending[i].data(), k.count);
        update(k, sum.data());
        for (auto& p : k.pending) p = {};
        k.pushed.assign(k.pushed.size(), false);
        k.pushes = 0;
        cv_.notify_all();
      }
      return reply;
    }
    case Kind::kPull: {
      Key& k = key_of(m, "kvstore_pull");
      // Under dist_sync a worker reads the value its own last push went into.
      if (sync_) wait(lock, [&] { return !k.pushed[static_cast<size_t>(worker)]; });
      out.resize(k.count * dtype_size(k.dtype));
      try {
        copy_to_host(*k.value, out.data(), out.size());  // waits for the update
      } catch (const Error& e) {
        fail(e.status(), "kvstore_pull: the update of key ", m.key, " failed: ", e.what());
      }
      reply.bytes = out.size();
      return reply;
    }
    case Kind::kSetOptimizer: {
      std::optional<braid_optimizer_params> p;
      if (!payload.empty()) {
        braid_optimizer_params raw{};
        if (payload.size() > sizeof raw) fail(BRAID_ERR_IO, "kvstore_set_optimizer: the optimizer is too long");
        std::memcpy(&raw, payload.data(), payload.size());
        p = parallel::checked_optimizer(&raw, "params");
      }
      // As the KVStore in one process: another kind starts every key's state afresh.
      if (!p || !optimizer_ || p->kind != optimizer_->kind)
        for (auto& [key, k] : keys_) k.state = parallel::OptimizerState{};
      optimizer_ = p;
      return reply;
    }
    case Kind::kBarrier: {
      check_departed(nullptr, "barrier");
      const uint64_t generation = barrier_generation_;
      if (++barrier_arrived_ == job_.num_workers) {
        barrier_arrived_ = 0;
        ++barrier_generation_;
        cv_.notify_all();
      } else {
        wait(lock, [&] { return barrier_generation_ != generation; });
      }
      return reply;
    }
    default:
      fail(BRAID_ERR_IO, "worker ", worker, " sent a message of kind ", static_cast<uint32_t>(m.kind),
           ", which braid's KVStore protocol does not have");
  }
}

void Server::session(int32_t worker) {
  const std::string who = cat("worker ", worker);
  std::unique_ptr<Channel> channel;
  try {
    channel = std::make_unique<Channel>(plugin_, *store_, cat(prefix_, "w", worker, "-s", job_.rank, "/"), 0, address_,
                                        job_.timeout);
  } catch (const Error& e) {
    fail_job(cat(who, " did not connect to server ", job_.rank, ": ", e.what()));
    return;
  }
  std::vector<std::byte> payload, out;
  for (;;) {
    Message m;
    try {
      m = channel->receive(kIdleWait, cat("server ", job_.rank, " waiting for ", who));
      if (m.bytes > (uint64_t{1} << 40)) fail(BRAID_ERR_IO, who, " announced a payload of ", m.bytes, " bytes");
      payload.resize(m.bytes);
      channel->receive_payload(payload.data(), m.bytes, job_.timeout, cat("server ", job_.rank, " reading ", who));
    } catch (const std::exception& e) {
      fail_job(cat(who, "'s connection to server ", job_.rank, " failed (did it die?): ", e.what()));
      return;
    }
    if (m.kind == Kind::kBye) {
      {
        Lock lock(mu_);
        departed_.push_back(worker);
        if (failure_.empty()) {
          try {
            check_departed(nullptr, nullptr);
          } catch (const Error&) {  // failure_ is set: the waiting workers get it
          }
        }
      }
      Message reply;
      reply.seq = m.seq;
      try {
        channel->send(reply, nullptr, "kvstore bye");
      } catch (...) {  // the worker is leaving anyway
      }
      return;
    }
    Message reply;
    out.clear();
    try {
      try {
        reply = handle(worker, m, payload, out);
      } catch (const std::bad_alloc&) {
        fail(BRAID_ERR_OUT_OF_MEMORY, "server ", job_.rank, " is out of memory");
      }
    } catch (const Error& e) {
      const std::string text = e.what();
      reply = Message{};
      reply.key = m.key;
      reply.status = e.status();
      reply.bytes = text.size();
      out.assign(reinterpret_cast<const std::byte*>(text.data()),
                 reinterpret_cast<const std::byte*>(text.data()) + text.size());
    }
    reply.seq = m.seq;
    try {
      channel->send(reply, out.data(), cat("server ", job_.rank, " answering ", who));
    } catch (const Error& e) {
      fail_job(cat(who, "'s connection to server ", job_.rank, " failed (did it die?): ", e.what()));
      return;
    }
  }
}

void Server::run() {
  prefix_ = cat("braid/", job_.restart, "/kv/");
  std::shared_ptr<StoreServer> served;
  if (job_.role == Role::kScheduler) served = std::make_shared<StoreServer>(job_.port);
  if (job_.rank < 0 && job_.role == Role::kServer) {  // MXNet's variables: ranks in the order servers arrive
    StoreClient counter(job_.address, job_.port, -1, job_.timeout);
    job_.rank = static_cast<int32_t>(counter.add(prefix_ + "server_ranks", 1) - 1);
    if (job_.rank >= job_.num_servers)
      fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore server: more servers joined than DMLC_NUM_SERVER=", job_.num_servers);
  }
  store_ = std::make_unique<StoreClient>(job_.address, job_.port, store_id(job_, job_.role, job_.rank), job_.timeout);
  const int64_t everyone = job_.num_workers + job_.num_servers;
  if (job_.role == Role::kScheduler) {
    // Serves the store until every worker and server has left (or died).
    while (store_->add(prefix_ + "left", 0) + static_cast<int64_t>(store_->dead_ranks().size()) < everyone)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return;
  }
  // The store type comes from worker 0 ("dist_async with 2 workers and 1 servers").
  const auto shape = store_->get(prefix_ + "shape", job_.timeout);
  if (!shape)
    fail(BRAID_ERR_TIMEOUT, "kvstore server: worker 0 made no dist store within ", job_.timeout.count(), " ms");
  sync_ = shape->rfind("dist_async", 0) != 0;
  host_ = staging_device(ctx_);
  if (!host_)
    fail(BRAID_ERR_UNSUPPORTED, "kvstore server: the context has no host-memory device (load the CPU backend)");
  plugin_ = load_comm_plugin(job_.backend, ctx_.plugin_path);
  address_ = local_address(job_.address, job_.port);
  std::vector<std::thread> sessions;
  for (int32_t w = 0; w < job_.num_workers; ++w) sessions.emplace_back([this, w] { session(w); });
  for (auto& t : sessions) t.join();
  keys_.clear();
  try {
    store_->add(prefix_ + "left", 1);
  } catch (...) {  // the store is gone (worker 0 left first)
  }
  store_.reset();
  if (!failure_.empty()) fail(BRAID_ERR_IO, "kvstore server ", job_.rank, ": ", failure_);
}

}  // namespace

void run_kvstore_server(Context& ctx) {
  KVJob job = read_kv_job();
  if (job.role == Role::kWorker)
    fail(BRAID_ERR_INVALID_STATE,
         "kvstore_run_server: this process is a worker; a server has BRAID_ROLE=server (or DMLC_ROLE=server), as "
         "braid-run --servers sets");
  Server(ctx, std::move(job)).run();
}

}  // namespace braid::distributed
