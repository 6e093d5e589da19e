#include "distributed/kvstore_wire.h"

#include <string_view>

#include "core/env.h"
#include "core/error.h"
#include "distributed/launch_env.h"
#include "distributed/store.h"

namespace braid::distributed {
namespace {

constexpr uint64_t kMaxProcesses = 1 << 20;
constexpr uint64_t kTagMessage = 1, kTagPayload = 2;

// The first of the variables that is set, or NULL; `which` says its name.
const char* first_env(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names)
    if (const char* v = env(n)) {
      *which = n;
      return v;
    }
  return nullptr;
}

int32_t count_from(std::initializer_list<const char*> names, int32_t fallback, const char* meaning) {
  const char* which = nullptr;
  if (!first_env(names, &which)) return fallback;
  return static_cast<int32_t>(std::min<uint64_t>(env_u64(which, 0, meaning), kMaxProcesses + 1));
}

}  // namespace

KVJob read_kv_job() {
  KVJob job;
  const char* which = nullptr;
  const char* role = first_env({"BRAID_ROLE", "DMLC_ROLE"}, &which);
  const bool dmlc = env("DMLC_ROLE") != nullptr;
  if (role) {
    const std::string_view r = role;
    if (r == "worker")
      job.role = Role::kWorker;
    else if (r == "server")
      job.role = Role::kServer;
    else if (r == "scheduler")
      job.role = Role::kScheduler;
    else
      fail(BRAID_ERR_INVALID_ARGUMENT, which, "='", role, "' is not worker, server or scheduler");
  }
  const LaunchEnv e = read_launch_env();
  job.num_servers = count_from({"BRAID_NUM_SERVERS", "DMLC_NUM_SERVER"}, 0, "a number of server processes");
  if (job.role == Role::kWorker && e.rank >= 0) {
    job.rank = e.rank;
    job.num_workers = e.world_size;
  } else {
    job.num_workers = count_from({"BRAID_WORLD_SIZE", "DMLC_NUM_WORKER"}, 1, "a number of workers");
    job.rank = job.role == Role::kServer ? count_from({"BRAID_SERVER_RANK"}, -1, "a server rank") : dmlc ? -1 : 0;
  }
  if (job.num_workers < 1 || static_cast<uint64_t>(job.num_workers) > kMaxProcesses)
    fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore: the number of workers (", job.num_workers, ") is not from 1 to ",
         kMaxProcesses);
  if (static_cast<uint64_t>(job.num_servers) > kMaxProcesses)
    fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore: the number of servers is over ", kMaxProcesses);
  if (job.role == Role::kServer && job.rank >= job.num_servers)
    fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore: BRAID_SERVER_RANK=", job.rank, " is not below the number of servers (",
         job.num_servers, ")");
  job.scheduler_serves = dmlc;
  if (const char* a = first_env({"DMLC_PS_ROOT_URI"}, &which); a && dmlc)
    job.address = a;
  else if (!e.master_addr.empty())
    job.address = e.master_addr;
  const int32_t master_port = e.master_port > 0 ? e.master_port : 29500;
  job.port = count_from({"BRAID_KVSTORE_PORT", "DMLC_PS_ROOT_PORT"}, master_port + 1, "a TCP port");
  if (job.port < 1 || job.port > 65535)
    fail(BRAID_ERR_INVALID_ARGUMENT, "kvstore: port ", job.port, " is not a TCP port");
  // The servers' messages are host memory: a plugin of device memory (BRAID_DIST_BACKEND=nccl for the
  // process groups) cannot carry them, so the KVStore has a variable of its own.
  if (const char* b = env("BRAID_KVSTORE_BACKEND")) job.backend = b;
  const uint64_t seconds = env_u64("BRAID_DIST_TIMEOUT", 300, "a number of seconds");
  job.timeout = std::chrono::milliseconds(std::max<uint64_t>(1, std::min<uint64_t>(seconds, 10'000'000)) * 1000);
  job.restart = e.restart;
  const char* bound_var = nullptr;
  if (first_env({"BRAID_KVSTORE_BIGARRAY_BOUND", "MXNET_KVSTORE_BIGARRAY_BOUND"}, &bound_var))
    job.bigarray_bound = std::max<uint64_t>(1, env_u64(bound_var, 1000000, "a number of elements"));
  return job;
}

int32_t store_id(const KVJob& job, Role role, int32_t rank) {
  return role == Role::kWorker   ? rank
         : role == Role::kServer ? job.num_workers + rank
                                 : job.num_workers + job.num_servers;
}

std::string participant_name(const KVJob& job, int32_t id) {
  if (id < job.num_workers) return cat("worker ", id);
  if (id < job.num_workers + job.num_servers) return cat("server ", id - job.num_workers);
  return "the scheduler";
}

std::vector<Part> partition(int64_t key, uint64_t count, const KVJob& job) {
  const auto s = static_cast<uint64_t>(job.num_servers);
  if (count < job.bigarray_bound || s == 1) {
    const auto m = static_cast<int64_t>(s);
    return {{static_cast<int32_t>(((key % m) + m) % m), 0, count}};
  }
  std::vector<Part> parts;
  for (uint64_t i = 0; i < s; ++i) {
    const uint64_t begin = count * i / s, end = count * (i + 1) / s;
    parts.push_back({static_cast<int32_t>(i), begin, end - begin});
  }
  return parts;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kInit: return "init";
    case Kind::kPush: return "push";
    case Kind::kPull: return "pull";
    case Kind::kSetOptimizer: return "set_optimizer";
    case Kind::kBarrier: return "barrier";
    case Kind::kBye: return "bye";
    case Kind::kReply: return "reply";
  }
  return "?";
}

Channel::Channel(std::shared_ptr<CommPlugin> plugin, StoreClient& store, const std::string& prefix, int32_t rank,
                 const std::string& address, std::chrono::milliseconds timeout)
    : plugin_(std::move(plugin)), peer_(1 - rank) {
  const braid_comm_store s = comm_store(store);
  const braid_comm_group_desc desc{sizeof desc,     rank, 2, &s, prefix.c_str(), static_cast<uint64_t>(timeout.count()),
                                   address.c_str(), -1};
  const braid_status st = plugin_->api->group_create(&desc, &group_);
  if (st != BRAID_OK) fail(st, plugin_->api->last_error());
}

Channel::~Channel() {
  if (group_) plugin_->api->group_destroy(group_);
}

void Channel::run(braid_comm_op op, void* data, uint64_t bytes, uint64_t tag, std::chrono::milliseconds timeout,
                  const std::string& what) {
  braid_comm_call call{};
  call.struct_size = sizeof call;
  call.op = op;
  if (op == BRAID_COMM_SEND)
    call.send = data;
  else
    call.recv = data;
  call.count = bytes;
  call.dtype = BRAID_UINT8;
  call.peer = peer_;
  call.tag = tag;
  call.timeout_ms = static_cast<uint64_t>(timeout.count());  // 0: the group's
  const braid_status st = plugin_->api->run(group_, &call);
  if (st != BRAID_OK) fail(st, what, ": ", plugin_->api->last_error());
}

void Channel::send(const Message& m, const void* payload, const std::string& what) {
  Message copy = m;
  run(BRAID_COMM_SEND, &copy, sizeof copy, kTagMessage, std::chrono::milliseconds(0), what);
  if (m.bytes)
    run(BRAID_COMM_SEND, const_cast<void*>(payload), m.bytes, kTagPayload, std::chrono::milliseconds(0), what);
}

Message Channel::receive(std::chrono::milliseconds timeout, const std::string& what) {
  Message m;
  run(BRAID_COMM_RECV, &m, sizeof m, kTagMessage, timeout, what);
  if (m.magic != Message::kMagic) fail(BRAID_ERR_IO, what, ": a message that is not braid's KVStore protocol");
  return m;
}

void Channel::receive_payload(void* into, uint64_t bytes, std::chrono::milliseconds timeout, const std::string& what) {
  if (bytes) run(BRAID_COMM_RECV, into, bytes, kTagPayload, timeout, what);
}

}  // namespace braid::distributed
