// The worker's side of a KVStore across processes (parallel/remote_store.h): each key's parts go to
// the servers that hold them, over one Channel per server. docs/DISTRIBUTED.md, "KVStore across
// processes".
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "core/dtype.h"
#include "core/error.h"
#include "distributed/kvstore_wire.h"
#include "distributed/launch_env.h"
#include "distributed/process_group.h"
#include "distributed/store.h"
#include "ops/copy.h"
#include "parallel/remote_store.h"

namespace braid::distributed {
namespace {

// One "dist" store per process, as in MXNet: its servers serve one store per worker.
std::atomic<bool> g_store_live{false};

class DistStore final : public parallel::RemoteStore {
 public:
  DistStore(Context& ctx, std::string_view type);
  ~DistStore() override;

  void init(int64_t key, Tensor& value) override;
  void push(int64_t key, Tensor& sum) override;
  void pull(int64_t key, Tensor& into) override;
  void set_optimizer(const braid_optimizer_params* params) override;
  void barrier() override;
  braid_kvstore_info info() const override {
    return {sizeof(braid_kvstore_info), job_.rank, job_.num_workers, job_.num_servers};
  }

 private:
  // A request to one server and where its reply's payload goes.
  struct Exchange {
    int32_t server;
    Message request;
    const void* payload = nullptr;
    void* reply = nullptr;  // reply.bytes must equal reply_bytes
    uint64_t reply_bytes = 0;
  };
  // Sends every request, then receives every reply (the servers work meanwhile). A failed reply
  // throws its error; a broken connection or a timeout fails the store for good.
  void exchange(std::vector<Exchange>& xs, const char* call);
  // Rank 0's exchange, then a barrier of every worker (init, set_optimizer).
  void exchange_then_barrier(std::vector<Exchange>& xs, const char* call);
  // t's bytes in host memory once its writers have ended (staged through a host device if needed).
  const std::byte* host_bytes(Tensor& t, TensorRef& staged, const char* call);
  // One request per server holding a part of the key: its part of `send` as the payload, and its part
  // of `receive` for the reply (either may be NULL).
  std::vector<Exchange> requests(int64_t key, const Tensor& t, Kind kind, const std::byte* send,
                                 std::byte* receive) const;

  Context& ctx_;
  ContextRef ctx_ref_;
  KVJob job_;
  std::string type_;
  std::string prefix_;
  std::shared_ptr<StoreServer> store_server_;  // worker 0, unless a scheduler serves the store
  std::unique_ptr<StoreClient> store_;
  std::vector<std::unique_ptr<Channel>> channels_;  // one per server
  uint64_t seq_ = 0;
  std::string failure_;  // the error that broke a connection: every later call fails with it
};

DistStore::DistStore(Context& ctx, std::string_view type) : ctx_(ctx), ctx_ref_(ctx), type_(type) {
  job_ = read_kv_job();
  if (job_.role != Role::kWorker)
    fail(BRAID_ERR_INVALID_STATE, "kvstore_create: this process is a KVStore ",
         job_.role == Role::kServer ? "server" : "scheduler",
         " (BRAID_ROLE or DMLC_ROLE): it serves the keys with braid_kvstore_run_server instead");
  if (job_.num_servers == 0)
    fail(BRAID_ERR_INVALID_STATE, "kvstore_create: type '", type_,
         "' keeps its keys in server processes, and this job has none (BRAID_NUM_SERVERS or DMLC_NUM_SERVER is "
         "unset or 0): start the job with braid-run -n WORKERS --servers SERVERS (docs/DISTRIBUTED.md)");
  if (g_store_live.exchange(true))
    fail(BRAID_ERR_INVALID_STATE, "kvstore_create: this process already has a '", type_,
         "' store (one per process, as in MXNet); release it first");
  try {
    auto plugin = load_comm_plugin(job_.backend, ctx.plugin_path);
    prefix_ = cat("braid/", job_.restart, "/kv/");
    if (!job_.scheduler_serves && job_.rank == 0) store_server_ = std::make_shared<StoreServer>(job_.port);
    if (job_.rank < 0) {  // MXNet's variables: ranks in the order the workers arrive
      StoreClient counter(job_.address, job_.port, -1, job_.timeout);
      job_.rank = static_cast<int32_t>(counter.add(prefix_ + "worker_ranks", 1) - 1);
      if (job_.rank >= job_.num_workers)
        fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_create: more workers joined than DMLC_NUM_WORKER=", job_.num_workers);
    }
    store_ =
        std::make_unique<StoreClient>(job_.address, job_.port, store_id(job_, Role::kWorker, job_.rank), job_.timeout);
    // Every worker must see the same job: the same store type, worker and server counts.
    const std::string shape = cat(type_, " with ", job_.num_workers, " workers and ", job_.num_servers, " servers");
    if (job_.rank == 0) store_->set(prefix_ + "shape", shape.data(), shape.size());
    const auto first = store_->get(prefix_ + "shape", job_.timeout);
    if (!first) fail(BRAID_ERR_TIMEOUT, "kvstore_create: worker 0 did not join within ", job_.timeout.count(), " ms");
    if (*first != shape)
      fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore_create: worker 0 made a ", *first, ", worker ", job_.rank, " a ",
           shape);
    const std::string address = local_address(job_.address, job_.port);
    for (int32_t s = 0; s < job_.num_servers; ++s)
      channels_.push_back(std::make_unique<Channel>(plugin, *store_, cat(prefix_, "w", job_.rank, "-s", s, "/"), 1,
                                                    address, job_.timeout));
  } catch (...) {
    g_store_live = false;
    throw;
  }
}

DistStore::~DistStore() {
  // Goodbye to every server (they end once every worker has said it), then leave the store; worker 0,
  // which serves it, waits (at most 10 s) for the others to leave first.
  if (failure_.empty()) {
    for (size_t s = 0; s < channels_.size(); ++s) {
      try {
        Message bye;
        bye.kind = Kind::kBye;
        bye.seq = ++seq_;
        channels_[s]->send(bye, nullptr, "kvstore_release");
        (void)channels_[s]->receive(std::chrono::seconds(10), "kvstore_release");
      } catch (...) {  // the server is gone already: nothing to say goodbye to
      }
    }
  }
  channels_.clear();
  try {
    if (store_) {
      store_->add(prefix_ + "left", 1);
      if (store_server_) {
        const int64_t all = job_.num_workers + job_.num_servers;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline &&
               store_->add(prefix_ + "left", 0) + static_cast<int64_t>(store_->dead_ranks().size()) < all)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  } catch (...) {  // the store is gone (its server left first)
  }
  store_.reset();
  store_server_.reset();
  g_store_live = false;
}

void DistStore::exchange(std::vector<Exchange>& xs, const char* call) {
  if (!failure_.empty()) fail(BRAID_ERR_IO, call, ": ", failure_);
  std::string what;
  try {
    for (Exchange& x : xs) {
      x.request.seq = ++seq_;
      what = cat(call, " (request ", x.request.seq, " to server ", x.server, ")");
      channels_[static_cast<size_t>(x.server)]->send(x.request, x.payload, what);
    }
    // Every reply is read, even after a refusal, so that each channel stays in step.
    std::optional<Error> refused;
    for (Exchange& x : xs) {
      Channel& c = *channels_[static_cast<size_t>(x.server)];
      what = cat(call, " (request ", x.request.seq, " to server ", x.server, ")");
      const Message r = c.receive(job_.timeout, what);
      if (r.seq != x.request.seq)
        fail(BRAID_ERR_IO, what, ": server ", x.server, " answered request ", r.seq, " instead");
      if (r.status != BRAID_OK) {
        std::string text(r.bytes, '\0');
        c.receive_payload(text.data(), text.size(), job_.timeout, what);
        // The server refused this request (a key not initialised, a dtype that differs) or has failed
        // (a worker died): either way the error is the server's.
        if (!refused)
          refused.emplace(static_cast<braid_status>(r.status), cat(call, ": server ", x.server, ": ", text));
        continue;
      }
      if (r.bytes != x.reply_bytes)
        fail(BRAID_ERR_IO, what, ": server ", x.server, " sent ", r.bytes, " bytes where ", x.reply_bytes,
             " were expected");
      c.receive_payload(x.reply, r.bytes, job_.timeout, what);
    }
    if (refused) throw *refused;
  } catch (const Error& e) {
    // A broken connection or a timeout leaves the channels in an unknown state: the store is unusable.
    // A refusal by a server (its status) leaves them in step, and only this call fails.
    if (e.status() == BRAID_ERR_IO || e.status() == BRAID_ERR_TIMEOUT) {
      std::string dead;
      try {
        for (int32_t id : store_->dead_ranks()) dead += (dead.empty() ? "" : ", ") + participant_name(job_, id);
      } catch (...) {  // the store is gone too
      }
      failure_ = dead.empty() ? e.what() : cat(e.what(), " (", dead, " died)");
      fail(e.status(), failure_);
    }
    throw;
  }
}

const std::byte* DistStore::host_bytes(Tensor& t, TensorRef& staged, const char* call) {
  Tensor* host = &t;
  if (!host_address(t)) {
    Device* dev = staging_device(ctx_);
    if (!dev)
      fail(BRAID_ERR_UNSUPPORTED, call, ": the value is on ", t.device().id,
           ", and no device of this context has host memory to stage it through (load the CPU backend)");
    staged = new_tensor(ctx_, *dev, t.dtype, t.shape);
    push_range_copy(call, t, 0, *staged, 0, t.shape.numel());
    host = staged.get();
  }
  const WaitResult r = ctx_.engine->wait_to_read(*host->storage);
  if (r.status != BRAID_OK) fail(r.status, call, ": ", r.message);
  return host_address(*host);
}

std::vector<DistStore::Exchange> DistStore::requests(int64_t key, const Tensor& t, Kind kind, const std::byte* send,
                                                     std::byte* receive) const {
  const auto total = static_cast<uint64_t>(t.shape.numel());
  const uint64_t size = dtype_size(t.dtype);
  std::vector<Exchange> xs;
  for (const Part& p : partition(key, total, job_)) {
    Exchange x{p.server, {}};
    x.request.kind = kind;
    x.request.key = key;
    x.request.offset = p.offset;
    x.request.count = p.count;
    x.request.total = total;
    x.request.dtype = static_cast<int32_t>(t.dtype);
    if (send) {
      x.request.bytes = p.count * size;
      x.payload = send + p.offset * size;
    }
    if (receive) {
      x.reply = receive + p.offset * size;
      x.reply_bytes = p.count * size;
    }
    xs.push_back(x);
  }
  return xs;
}

void DistStore::init(int64_t key, Tensor& value) {
  if (job_.rank == 0) {
    TensorRef staged;
    std::vector<Exchange> xs = requests(key, value, Kind::kInit, host_bytes(value, staged, "kvstore_init"), nullptr);
    exchange_then_barrier(xs, "kvstore_init");
    return;
  }
  barrier();
}

void DistStore::push(int64_t key, Tensor& sum) {
  TensorRef staged;
  std::vector<Exchange> xs = requests(key, sum, Kind::kPush, host_bytes(sum, staged, "kvstore_push"), nullptr);
  exchange(xs, "kvstore_push");
}

void DistStore::pull(int64_t key, Tensor& into) {
  Device* dev = host_address(into) ? &into.device() : staging_device(ctx_);
  if (!dev)
    fail(BRAID_ERR_UNSUPPORTED, "kvstore_pull: the key's value is on ", into.device().id,
         ", and no device of this context has host memory to receive it in (load the CPU backend)");
  // A fresh storage has no readers or writers yet: the replies are written straight into it.
  TensorRef fresh = new_tensor(ctx_, *dev, into.dtype, into.shape);
  std::vector<Exchange> xs = requests(key, into, Kind::kPull, nullptr, host_address(*fresh));
  exchange(xs, "kvstore_pull");
  push_range_copy("kvstore_pull", *fresh, 0, into, 0, into.shape.numel());
}

void DistStore::set_optimizer(const braid_optimizer_params* params) {
  if (job_.rank == 0) {
    std::vector<Exchange> xs;
    for (int32_t s = 0; s < job_.num_servers; ++s) {
      Message m;
      m.kind = Kind::kSetOptimizer;
      m.bytes = params ? sizeof *params : 0;
      xs.push_back({s, m, params});
    }
    exchange_then_barrier(xs, "kvstore_set_optimizer");
    return;
  }
  barrier();
}

void DistStore::exchange_then_barrier(std::vector<Exchange>& xs, const char* call) {
  // A refusal still reaches the barrier, which every other worker is waiting in.
  std::optional<Error> refused;
  try {
    exchange(xs, call);
  } catch (const Error& e) {
    if (!failure_.empty()) throw;  // the connections are broken: no barrier to reach
    refused.emplace(e);
  }
  barrier();
  if (refused) throw *refused;
}

void DistStore::barrier() {
  Message m;
  m.kind = Kind::kBarrier;
  std::vector<Exchange> xs{{0, m}};
  exchange(xs, "kvstore_barrier");
}

std::unique_ptr<parallel::RemoteStore> make_dist_store(Context& ctx, std::string_view type) {
  return std::make_unique<DistStore>(ctx, type);
}

// Registered when libbraid is loaded: the KVStore (a layer below) makes "dist" stores through it.
const bool g_registered = [] {
  parallel::set_remote_store_maker(&make_dist_store);
  return true;
}();

}  // namespace
}  // namespace braid::distributed
